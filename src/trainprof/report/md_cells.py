"""Markdown cells: record text escaped for prose and tables, names as code spans.

The `md`, `mdcode` and `mdcodes` filters of report.md's and diff.md's
templates (report/templating.py): Markdown has no autoescaping, so every record string passes
through one of these.
"""

from __future__ import annotations

import re
from typing import Any

from trainprof.report.names import short_names

NAME_WIDTH = 80  # a name in a table cell (report/names.py keeps look-alikes apart)


# Markdown's inline syntax: raw HTML and autolinks (< >), entities (&), links and images ([ ] !),
# emphasis (* _), code spans (`), strikethrough (~), table cells (|), and the backslash itself.
# A backslash before any ASCII punctuation shows that character as it is (CommonMark 2.4).
# An underscore between two letters or digits never opens or closes emphasis (CommonMark 6.2,
# "intraword"): `gc_disable` stays as it reads; `_u_` and `a _b_` are escaped.
_SPECIAL = re.compile(r"[\\`*\[\]<>|~&!]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# GitHub links bare URLs too (GFM "autolinks (extension)"): `://` and `www.` are what it looks
# for, and an escape inside them stops it (checked with cmark-gfm, GitHub's renderer). An
# e-mail address still becomes a mailto: link there: no escape stops that.
_BARE_URL = re.compile(r"://|(?i:www)\.")


def md_text(text: Any) -> str:
    """Record text in Markdown prose or a table cell, shown as it is: no raw HTML, no link, no
    emphasis, no code span, no cell break. The one escaping filter (`md`) of the Markdown
    templates for record strings; names shown as code go through `md_code` instead."""
    s = "" if text is None else str(text)
    s = _SPECIAL.sub(lambda m: "\\" + m.group(), s)
    s = _BARE_URL.sub(lambda m: ":\\/\\/" if m.group() == "://" else m.group()[:-1] + "\\.", s)
    return s.replace("\r", " ").replace("\n", " ")


def md_code(text: Any, n: int = NAME_WIDTH) -> str:
    """Text as inline code, cut to `n` characters (0: whole). Inside a code span nothing is
    markup (kernel names hold < > &); a backtick would end the span (shown as '), a pipe the
    table cell (escaped: GFM reads `\\|` as | inside a cell's code span too)."""
    s = str(text).replace("`", "'").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    return f"`{s if not n or len(s) <= n else s[: n - 1] + '…'}`"


def md_codes(names: list[Any], n: int = NAME_WIDTH) -> list[str]:
    """The names of one table as inline code, shortened as a set (report/names.py)."""
    return [md_code(x, n) for x in short_names(names, n)]
