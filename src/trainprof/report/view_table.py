"""A table as report.html lays it out: header and rows of cells already formatted, so the
template only places them (issue #44 item 5: templates that lay out, not compute).

A view builder (report/view_ranks.py) reads the records, formats each figure through
report/figures.show with its record field (captured as the template's `fig` was), and
returns `Table`s; templates/report.html.j2's `table` macro writes any of them. A cell's
`text` is escaped there like any value (Markup passes as it is: a cell's own markup, such as
a straggler badge, built with markupsafe from escaped parts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Cell:
    text: Any  # the value shown (str, int; Markup for a cell's own markup)
    num: bool = False  # a figure: right-aligned (class="n")
    br: bool = False  # a line break before the cell (a long row wraps in the page's source)


@dataclass(frozen=True)
class Table:
    head: tuple[Cell, ...]
    rows: tuple[tuple[Cell, ...], ...]


def head(*names: str) -> tuple[Cell, ...]:
    """Header cells; a name starting with '#' is a figure's column ('#step' -> 'step', right-aligned)."""
    return tuple(Cell(n[1:], num=True) if n.startswith("#") else Cell(n) for n in names)
