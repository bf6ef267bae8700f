"""report.html's bottleneck flowchart as a view: one row per test the path asked. A path the
record stores shows its figures through report/figures.show with their field; one computed here
for an old record (report/context.py chart) has no field to name, so it is formatted plainly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainprof.report.figures import show


@dataclass(frozen=True)
class FlowRow:
    n: int  # the test's place on the path, from 1
    question: str
    value: str
    threshold: str
    answer: str
    source: str


@dataclass(frozen=True)
class FlowView:
    branch: str
    rows: tuple[FlowRow, ...]


def _row(t: Any, i: int, at: str | None) -> FlowRow:
    f = f"{at}.path[{i}]" if at else None
    if t.value is None:
        value = "unknown"
    else:
        value = show(t.value, "pct_value", f + ".value") if f else "%.1f%%" % t.value
    if not t.threshold:  # a "which is largest" test has none (0)
        threshold = "—"
    else:
        threshold = show(t.threshold, "pct_value0", f + ".threshold") if f else "%.0f%%" % t.threshold
    return FlowRow(i + 1, t.question, value, threshold, t.answer, t.source)


def flow_view(chart: Any, at: str | None) -> FlowView | None:
    """`chart`: the path (report/context.py chart), `at` its record field, None when computed."""
    if not chart:
        return None
    return FlowView(chart.branch, tuple(_row(t, i, at) for i, t in enumerate(chart.path)))
