"""report.html's step-split table (report/view_table.py): the mean of each phase over the
measured steps, its share of the mean step, and, where a few slow steps drive a phase's mean,
its median. Every figure through report/figures.show with its field in run.json, as the
template showed it; the rows spaced as the page's source spaced them (the median row does not
end its line)."""

from __future__ import annotations

from typing import Any

from trainprof.recordtypes.base import or_default
from trainprof.report.colours import phases_in
from trainprof.report.figures import show
from trainprof.report.view_table import Cell, Row, Table, head, table

AT = "run.summary.phase_split"


def _figs(split: dict, name: str, fmt: str) -> tuple[Cell, ...]:
    """One cell per phase: its `name` figure (— where the record lacks the phase)."""
    return tuple(Cell(show((split.get(k) or {}).get(name), fmt, f"{AT}.{k}.{name}"), "n") for _, k, _ in phases_in(split))


def _median(q: Any, k: str) -> str:
    """A phase's median and its share, where its mean is outlier-driven; "" otherwise."""
    if not (isinstance(q, dict) and q.get("outlier_driven")):
        return ""
    return f"{show(q.get('median_s'), 's', f'{AT}.{k}.median_s')} " \
           f"({show(q.get('median_share_pct'), 'pct_value', f'{AT}.{k}.median_share_pct')})"


def step_split_table(s: Any) -> Table:
    """`s`: run.json's summary."""
    split = or_default(s.phase_split, None) or {}
    rows = [Row((Cell(f"mean of {s.measured_steps} measured steps"), *_figs(split, "mean_s", "s"),
                 Cell(show(s.step_time_s, "s", "run.summary.step_time_s"), "n")), end=True),
            Row((Cell("share of the mean step"), *_figs(split, "mean_share_pct", "pct_value"), Cell("100%", "n")),
                end=True)]
    if any(isinstance(q, dict) and q.get("outlier_driven") for q in split.values()):
        rows.append(Row((Cell("median, where a few slow steps drive the mean"),
                         *(Cell(_median(split.get(k), k), "n") for _, k, _ in phases_in(split)),
                         Cell(show(s.step_time_median_s, "s", "run.summary.step_time_median_s"), "n")), end=False))
    return table(head("phase", *(f"#{label}" for label, _, _ in phases_in(split)), "#step"), rows, spread=True,
                 tbody_inline=True)
