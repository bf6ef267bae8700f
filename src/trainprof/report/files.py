"""Write report.html and report.md for a folder of records (`report`, `run`, `tune`, `study`)."""

from __future__ import annotations

from pathlib import Path

FORMATS = {"html": "report.html", "md": "report.md"}


def write_reports(folder: str | Path, out: str | Path | None = None, formats: list[str] | None = None,
                  name: str | None = None) -> list[Path]:
    """Render and write the reports atomically; returns the paths written."""
    from trainprof import atomic
    from trainprof.report.loader import load_folder

    bundle = load_folder(folder, name=name)
    out = Path(out) if out is not None else Path(folder)
    written = []
    for fmt in formats or list(FORMATS):
        if fmt == "html":
            from trainprof.report.html import render_html

            text = render_html(bundle)
        else:
            from trainprof.report.markdown import render_markdown

            text = render_markdown(bundle, out)
        path = out / FORMATS[fmt]
        atomic.write_text(path, text)
        written.append(path)
    return written
