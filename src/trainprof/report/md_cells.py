"""Markdown cells: record text escaped for prose and tables, names as code spans, µs.

The `md`, `mdcode`, `mdcodes`, `mdus` and `mdsus` filters of report.md's and diff.md's
templates (report/templating.py): Markdown has no autoescaping, so every record string passes
through one of these.
"""

from __future__ import annotations

from typing import Any

from trainprof.report.names import short_names
from trainprof.report.units import us

NAME_WIDTH = 80  # a name in a table cell (report/names.py keeps look-alikes apart)


def md_text(text: Any) -> str:
    """Record text in Markdown prose or a table cell: no raw HTML, no cell breaks, no emphasis."""
    s = "" if text is None else str(text)
    for ch in ("\\", "<", ">", "|", "*"):
        s = s.replace(ch, "\\" + ch)
    return s.replace("\n", " ")


def md_code(text: Any, n: int = NAME_WIDTH) -> str:
    """A name as inline code (kernel names hold < > &, safe inside a code span)."""
    s = str(text).replace("`", "'").replace("|", "\\|").replace("\n", " ")
    return f"`{s if len(s) <= n else s[: n - 1] + '…'}`"


def md_codes(names: list[Any], n: int = NAME_WIDTH) -> list[str]:
    """The names of one table as inline code, shortened as a set (report/names.py)."""
    return [md_code(x, n) for x in short_names(names, n)]


def md_us(v: float | None) -> str:
    return us(v, ms_digits=2)


def md_signed_us(v: float | None) -> str:
    return "—" if v is None else ("+" if v > 0 else "−" if v < 0 else "±") + md_us(abs(v))
