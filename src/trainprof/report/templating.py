"""The one Jinja environment that renders report.html, report.md and diff.md (docs/reports.md).

The templates are package data (report/templates/: `*.html.j2`, `*.md.j2`). One environment
means one set of filters and globals for both formats: `fig(value, fmt, field)` is
report/figures.show (so every figure of either report is captured with its record path at
render time), short names come from report/names.py, numbers from report/formatting.py. What
differs is the escaping, chosen by the template's extension: HTML templates are autoescaped
(markupsafe), Markdown templates escape explicitly through the `md` and `mdcode` filters
(report/md_cells.py: no raw HTML, no cell breaks, no emphasis from a record string), since
Markdown has no autoescaping of its own.

Whitespace: `trim_blocks` and `lstrip_blocks` (a line holding only a `{% tag %}` leaves no
trace in the output). A Markdown paragraph too long for one template line is written over
several inside `{% filter line %}`, which joins them with single spaces and ends the line; a
Markdown table row is one `{{ row(...) }}` call, its arguments spread over lines as any
expression may be; a phrase joined from parts ("a 1 ms, b 2 ms") is a list filled with
`{% do parts.append(...) %}` (jinja2.ext.do) and `|join`.

Cost: each template is compiled once per machine (Jinja's bytecode cache in the temp dir,
checked against the source's checksum; compiling report.html's took ~0.25 s of every
`analyze --out`).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from importlib import resources
from typing import Any, Callable

import msgspec

from trainprof.report import md_cells
from trainprof.report.figures import LABELS, key, show
from trainprof.report.names import short_name
from trainprof.report.formatting import (clip, duration, num, pct_of_fraction, pct_value, peak_provenance, shapes,
                                         signed_us, size)
from trainprof.vocab.idle import CAUSES

NAME_WIDTH = 90  # a name in an HTML table cell; the full name is the cell's hover title


_BREAK = re.compile(r"[ \t]*\n[ \t]*")


def line(text: str) -> str:
    """A Markdown line written over several template lines: joined with single spaces and
    ended by its newline (the `{% endfilter %}` tag's own newline is trimmed)."""
    return _BREAK.sub(" ", str(text).strip()) + "\n"


def row(*cells: Any) -> str:
    """One Markdown table row: `| a | b |`."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def struct_items(obj: Any) -> list[tuple[str, Any]]:
    """A Struct's (field, value) pairs in declaration order, as the file has them: a field
    absent from it (UNSET) is left out, as `dict.items()` of the record read as a dict did, and a
    nested block is shown as the file holds it (a dict: `device.peak_measurement`)."""
    import msgspec

    return [(k, msgspec.to_builtins(v) if isinstance(v, msgspec.Struct) else v)
            for k in obj.__struct_fields__ for v in (getattr(obj, k),) if v is not msgspec.UNSET]


def _report_globals() -> dict[str, Any]:
    """What report.md's macros read besides their arguments (a macro imported with `{% from %}`
    sees the environment's globals only): constant tables, empty blocks to default to, and
    run.json's energy lines. A record's phrases reach the macros as views passed as arguments
    (report/view_study.py, view_rank_md.py, view_diff.py), not as functions here."""
    from trainprof.recordtypes.analysis import OpRoofline
    from trainprof.recordtypes.study import Choice
    from trainprof.recordtypes.tune import Verify
    from trainprof.report.colours import OPTIONAL_PHASES, PHASES, PIPELINE

    def energy_lines(system: dict) -> list[tuple[str, str]]:
        from trainprof.report.system_terminal import energy_lines as lines  # rich: only with a run's sampler

        return lines(system)

    return {"phases": [(label, k) for label, k, _ in PHASES[:4] + (PIPELINE,) + PHASES[4:]],
            "optional_phases": OPTIONAL_PHASES,
            "idle_causes": CAUSES,
            "energy_lines": energy_lines,
            "no_roofline": OpRoofline(), "no_verify": Verify(), "no_choice": Choice(what=""),
            "zip": zip, "clip": clip}


def cache_dir() -> str | None:
    """A private folder for the compiled templates, or None (then each report compiles them,
    ~0.25 s). Compiled templates are code this process loads, so the folder must be ours alone:
    `<tmp>/trainprof-templates-<uid>` made 0700, used only if it is a real folder (not a link),
    owned by us and closed to everyone else; else the same under ~/.cache/trainprof. Jinja's own
    default (`<tmp>/_jinja2-cache-<uid>`) raised RuntimeError, a traceback from `report`, when
    another user had made that folder first (issue #45); here they only cost the cache."""
    import stat
    import tempfile

    getuid = getattr(os, "getuid", None)
    if getuid is None:  # no owners to check (Windows): no cache
        return None
    home_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainprof"
    for folder in (Path(tempfile.gettempdir()) / f"trainprof-templates-{getuid()}", home_cache / "templates"):
        try:
            folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                pass
            st = os.lstat(folder)
        except (OSError, RuntimeError):
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == getuid() and not st.st_mode & 0o077:
            return str(folder)
    return None


def static_text(name: str) -> str:
    """A file of report/templates/ as text (report.html's CSS and script, inlined)."""
    return (resources.files("trainprof.report") / "templates" / name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def env():  # noqa: ANN201
    import jinja2

    def tolerant(f: Callable) -> Callable:
        # A key a record lacks (Undefined, UNSET) reaches the filter as None and renders as
        # "—" (or "" as text), never as an error: records from other versions.
        return lambda v, *a, **k: f(None if isinstance(v, jinja2.Undefined) or v is msgspec.UNSET else v, *a, **k)

    folder = cache_dir()  # compiled templates kept per user (Jinja checks the source's checksum)
    cache = jinja2.FileSystemBytecodeCache(folder) if folder else None
    e = jinja2.Environment(loader=jinja2.PackageLoader("trainprof.report", "templates"), bytecode_cache=cache,
                           autoescape=jinja2.select_autoescape(["html.j2"], default_for_string=False, default=False),
                           trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.do"])
    filters = {
        # numbers, named as in report/formatting.py (HTML autoescapes them afterwards)
        "duration": duration, "signed_us": signed_us, "size": size, "pct_of_fraction": pct_of_fraction,
        "pct_value": pct_value, "num": num, "dims": shapes,
        "short": lambda v, n=NAME_WIDTH: short_name(v, n), "known": lambda v: v,
        # Markdown cells (escaped here: report/md_cells.py)
        "md": md_cells.md_text, "mdcode": md_cells.md_code,
    }
    e.filters.update({k: tolerant(f) for k, f in filters.items()})
    e.filters.update(mdcodes=md_cells.md_codes, line=line)
    # fig(value, fmt, field): a record field's figure, formatted as everywhere (report/figures.py)
    e.globals.update(fig=show, key=key, labels=LABELS, peak_provenance=peak_provenance, row=row, struct_items=struct_items,
                     **_report_globals())
    return e


def render(template: str, /, **context: Any) -> str:
    return env().get_template(template).render(**context)


def macro(name: str, macro_name: str) -> Callable[..., str]:
    """One macro of a template, callable from Python (a section rendered on its own, in tests)."""
    return getattr(env().get_template(name).module, macro_name)
