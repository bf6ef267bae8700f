"""report.html's benchmark table (report/view_table.py): each result's scalar fields, in the
order the first result lists them, with seconds as ms and bytes in binary units."""

from __future__ import annotations

from numbers import Number
from typing import Any

from trainprof.recordtypes.bench import Bench
from trainprof.report.formatting import duration, size
from trainprof.report.view_table import Cell, Table, table

TEXT_COLUMNS = ("dtype", "op", "shape", "test", "memory", "kind")  # left-aligned; the rest are figures


def _cell(col: str, v: Any) -> str:
    """Seconds as ms, bytes in binary units, other floats to 3 significant digits."""
    if v is None:
        return "—"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if col.endswith("_s"):
        return duration(v, "s", "step")
    if col == "bytes" or col.endswith("_bytes") or col == "bytes_moved":
        return size(int(v))
    return f"{v:,}" if isinstance(v, int) else f"{v:.3g}"


def _columns(bench: Bench) -> list[str]:
    """The scalar fields of bench results, in the order the first result lists them."""
    cols: list[str] = []
    for row in bench.results:
        if not isinstance(row, dict):
            continue
        for k, v in row.items():
            if k not in cols and (v is None or isinstance(v, (int, float, str, bool))):
                cols.append(k)
    return cols[:14]


def bench_table(bench: Bench) -> Table:
    cols = _columns(bench)
    head = tuple(Cell(c[:-2] if c.endswith("_s") else c, "" if c in TEXT_COLUMNS else "n") for c in cols)
    rows = ((Cell(_cell(c, row.get(c)), "n" if isinstance(row.get(c), Number) else "") for c in cols)
            for row in bench.results)
    return table(head, rows, row_lines=True)
