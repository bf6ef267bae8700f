"""Markdown cells: record text escaped for prose and tables, names as code spans, µs, tables.

Shared by report.md's sections (markdown.py, roofline_md.py, tune_md.py, study_md.py) and
diff.md (diff_text.py, diff_terminal.py), which import it and never each other's helpers.
"""

from __future__ import annotations

from typing import Any

from trainprof.recordtypes.base import or_default
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


def or_none(x: Any) -> Any:
    """A typed record's field, None where the file lacks it (UNSET)."""
    return or_default(x, None)


def md_table(head: list[str], rows: list[list[str]], right: set[int] | None = None) -> list[str]:
    """A Markdown table; `right`: the right-aligned columns (default: all but the first)."""
    right = right if right is not None else set(range(1, len(head)))
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---:" if i in right else "---" for i in range(len(head))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out + [""]
