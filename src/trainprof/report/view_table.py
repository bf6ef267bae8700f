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
from typing import Any, Iterable


@dataclass(frozen=True)
class Cell:
    text: Any  # the value shown (str, int; Markup for a cell's own markup)
    cls: str = ""  # its class: "n" a figure (right-aligned), "no", "name"
    br: bool = False  # a line break before the cell (a long row wraps in the page's source)
    title: str | None = None  # its hover title (a shortened name's full name); None: no attribute


@dataclass(frozen=True)
class Row:
    cells: tuple[Cell, ...]
    cls: str | None = None  # the row's class attribute (None: none; "" an empty one, as a ladder row has)
    end: bool | None = None  # the row ends its line (None: as the table's row_lines says; a roofline row
    # without a block, and the step split's last row, end theirs differently in the page's source)


@dataclass(frozen=True)
class Table:
    head: tuple[Cell, ...]
    rows: tuple[Row, ...]
    spread: bool = False  # <table>, <thead>, <tbody> and </table> on lines of their own
    row_lines: bool = False  # each row ends its line
    head_line: bool = False  # </thead> ends its line even when not spread (the modules' and host stacks' tables)
    tbody_inline: bool = False  # the first row follows <tbody> on its line


def head(*names: str) -> tuple[Cell, ...]:
    """Header cells; a name starting with '#' is a figure's column ('#step' -> 'step', right-aligned),
    one starting with a line break is written on a new line."""
    out = []
    for n in names:
        br = n.startswith("\n")
        n = n.lstrip("\n")
        out.append(Cell(n[1:], "n", br) if n.startswith("#") else Cell(n, "", br))
    return tuple(out)


def table(head_: tuple[Cell, ...], rows: Iterable[Row | tuple[Cell, ...]], spread: bool = False,
          row_lines: bool = False, head_line: bool = False, tbody_inline: bool = False) -> Table:
    """A Table; a row given as a tuple of cells is a Row without a class."""
    return Table(head_, tuple(r if isinstance(r, Row) else Row(tuple(r)) for r in rows), spread, row_lines,
                 head_line, tbody_inline)
