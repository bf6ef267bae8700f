"""Tables that never cut a number: fit the console, else wrap columns onto more tables.

rich shrinks a too-wide table by cutting cells (`1,868…`), which hides the very figure a
reader came for. `FitTable` decides at render time, from the console's width:

1. the table fits at its natural width → rendered as is;
2. it fits once text may wrap (each column at least as wide as its longest number and
   ``FOLD_MIN`` characters of text) → fixed column widths, text wraps, numbers stay whole;
3. otherwise the columns are dealt onto several tables, each repeating the key column(s)
   (the step, the metric name), like a wide row wrapped onto the next line.

A "number" is a whitespace-free token such as `1,868.3`, `-12.5%`, `0.209`, `3.2×`, `(32.8%),`
or a list of shapes (`2048x606x160,2048x160x20`).
"""

from __future__ import annotations

import copy
import re
from typing import Iterable

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Column, Table
from rich.text import Text

from trainprof.report.console import console

NUMBER = re.compile(r"^[~≈<>≤≥±+\-−]?\d[\d,]*(\.\d+)?([eE][+-]?\d+)?(%|×|x|\*|[a-zA-Zµ/]{1,6})?$"
                    r"|^\d[\d,x×]*$")  # or a shape list: 2048x606x160,2048x160x20
PUNCT = "()[]{},;:'\""
FOLD_MIN = 10  # text (names, kernels) may wrap or fold down to this many characters per line


def _plain(console: Console, cell: object) -> str:
    if isinstance(cell, str):
        if "[" not in cell and ":" not in cell:  # no markup, no :emoji: code: already plain
            return cell  # (skips render_str: the DDP summary 25.6 → 22.8 ms warm, median of 9)
        try:
            return console.render_str(cell).plain
        except Exception:  # noqa: BLE001 - not valid markup: measure the raw string
            return cell
    plain = getattr(cell, "plain", None)
    return plain if isinstance(plain, str) else ""


def is_number(token: str) -> bool:
    return bool(NUMBER.match(token.strip(PUNCT)))


def _need(console: Console, column: Column) -> tuple[int, int]:
    """(least, natural) content width of a column: least keeps every number whole."""
    least, most = 1, 1
    texts = [_plain(console, c) for c in column._cells]
    header = _plain(console, column.header)
    for text in [*texts, header]:
        for line in text.splitlines() or [""]:
            most = max(most, cell_len(line))
            for tok in line.split():
                n = cell_len(tok)
                least = max(least, n if is_number(tok) else min(n, FOLD_MIN))
    least = max(least, column.min_width or 0)  # rich clamps to it: so must we
    return least, max(most, least)


def _subtable(table: Table, indices: list[int], first: bool) -> Table:
    t = copy.copy(table)
    cols = []
    for pos, i in enumerate(indices):
        c = copy.copy(table.columns[i])
        c._index = pos
        cols.append(c)
    t.columns = cols
    if not first:
        t.title = f"{_plain(console(), table.title)} (continued)" if table.title else None
        t.caption = None
    return t


def _budget(table: Table, console: Console) -> tuple[list[int], list[int], int]:
    needs = [_need(console, c) for c in table.columns]
    pads = [table._get_padding_width(i) for i in range(len(table.columns))]
    least = [lo + p for (lo, _), p in zip(needs, pads)]
    natural = [hi + p for (_, hi), p in zip(needs, pads)]
    return least, natural, table._extra_width


def _widen(table: Table, console: Console, width: int) -> Table | None:
    """The table with fixed column widths that keep numbers whole, or None if it cannot fit."""
    least, natural, extra = _budget(table, console)
    if sum(natural) + extra <= width:
        return table
    if sum(least) + extra > width:
        return None
    widths = list(least)
    spare = width - extra - sum(widths)
    # give the spare width to the columns that want more, the smallest wants first (fair share)
    order = sorted(range(len(widths)), key=lambda j: natural[j] - least[j])
    for k, i in enumerate(order):
        give = min(natural[i] - least[i], spare // (len(order) - k))
        widths[i] += give
        spare -= give
    t = copy.copy(table)
    t.columns = []
    for i, c in enumerate(table.columns):
        c = copy.copy(c)
        c.width = widths[i] - table._get_padding_width(i)
        c.min_width = c.max_width = None
        c.no_wrap = False
        c.overflow = "fold"  # a long name folds onto the next line instead of losing characters
        t.columns.append(c)
    return t


def fit_parts(table: Table, console: Console, width: int, keys: int = 1) -> list[Table]:
    """The table as one or more tables no wider than `width` that keep every number whole."""
    whole = _widen(table, console, width)
    if whole is not None:
        return [whole]
    n = len(table.columns)
    keys = min(keys, n - 1)
    groups: list[list[int]] = []
    group = list(range(keys))
    for i in range(keys, n):
        trial = _subtable(table, [*group, i], first=not groups)
        if len(group) > keys and _widen(trial, console, width) is None:
            groups.append(group)
            group = [*range(keys), i]
        else:
            group.append(i)
    groups.append(group)
    parts = []
    for g_i, g in enumerate(groups):
        sub = _subtable(table, g, first=g_i == 0)
        # a single column too wide even alone: rendered by rich (it folds), nothing better exists
        parts.append(_widen(sub, console, width) or sub)
    return parts


class FitTable(Table):
    """A rich Table that fits the console without cutting a number (see the module doc).
    `key_columns`: leading columns repeated on every wrapped part (default 1)."""

    key_columns: int = 1

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        parts = fit_parts(self, console, options.max_width, self.key_columns)
        for i, part in enumerate(parts):
            if i:
                yield Text("")
            yield from Table.__rich_console__(part, console, options)


def all_numbers(texts: Iterable[str]) -> list[str]:
    """Number tokens of some texts (for tests: each must appear whole in the output)."""
    return [tok.strip(PUNCT) for t in texts for tok in t.split() if is_number(tok)]
