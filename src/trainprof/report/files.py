"""Write report.html and report.md for a folder of records (`report`, `run`, `tune`, `study`)."""

from __future__ import annotations

from pathlib import Path

from trainprof.errors import InputError

FORMATS = {"html": "report.html", "md": "report.md"}


def write_reports(folder: str | Path, out: str | Path | None = None, formats: list[str] | None = None,
                  name: str | None = None, texts: dict[str, str] | None = None) -> list[Path]:
    """Render and write the reports atomically; returns the paths written. `texts`: file
    name -> text of records this process has just written into `folder` (loader.load_folder)."""
    from trainprof import atomic
    from trainprof.report.loader import load_folder

    from jinja2 import UndefinedError  # the template reading a field of a null value

    bundle = load_folder(folder, name=name, texts=texts)
    out = Path(out) if out is not None else Path(folder)
    written = []
    for fmt in formats or list(FORMATS):
        try:
            if fmt == "html":
                from trainprof.report.html import render_html

                text = render_html(bundle)
            else:
                from trainprof.report.markdown import render_markdown

                text = render_markdown(bundle, out)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError, OverflowError,
                UndefinedError) as e:
            # report/schemas.py checks the fields the renderers index; this is the net under
            # it for a value of the right type but an impossible shape (an empty list where
            # one row is needed, say): one line naming the folder, not a traceback.
            raise InputError(f"{folder}: a record holds a value {FORMATS[fmt]} cannot use "
                             f"({type(e).__name__}: {str(e)[:160]}); regenerate it with the command that wrote it") from None
        path = out / FORMATS[fmt]
        atomic.write_text(path, text)
        written.append(path)
    return written


def warm() -> None:
    """What a first report pays before its first line (~95 ms on the DDP trace's, measured:
    imports, templates, the vendored charts' scripts, msgspec's decoder for the record), paid
    by a report writer started before the record exists, while the analysis runs
    (jobs/analyze_job.py)."""
    import msgspec
    from jinja2 import UndefinedError  # noqa: F401 - imported for write_reports

    from trainprof.report import context, diff_text, html, loader, markdown, study_text, text  # noqa: F401
    from trainprof.report.templating import env

    for name in ("report.html.j2", "report.md.j2"):
        env().get_template(name)
    html.vendor_js()
    msgspec.json.Decoder(loader.TYPED["analysis"])  # builds (and caches) the record type's decoding plan


def auto_report(folder: Path, *, enabled: bool = True, shown_as: Path | None = None,
                texts: dict[str, str] | None = None) -> str | None:
    """The reports `run`, `analyze --out`, `tune` and `study` write by default (off with --no-report).

    Returns the line to print. A report that fails to render costs a warning, never the
    measurements beside it. `shown_as`: the folder's final path when `folder` is a staging one.
    """
    import sys

    if not enabled:
        return None
    shown = Path(shown_as) if shown_as is not None else Path(folder)
    try:
        written = write_reports(folder, name=shown.resolve().name, texts=texts)
    except Exception as e:  # noqa: BLE001 - the run's records are already safe on disk
        from trainprof.controls import one_line, shell_join

        print(f"trainprof: warning: no report written ({type(e).__name__}: {one_line(str(e))}); "
              f"try `{shell_join(['trainprof', 'report', str(shown)])}`", file=sys.stderr)
        return None
    from trainprof.controls import visible

    return visible("wrote " + " and ".join(str(shown / p.name) for p in written))

