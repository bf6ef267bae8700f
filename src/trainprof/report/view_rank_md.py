"""A rank's phrases for report.md's method, profile and roofline macros, built once in Python
and passed to them as an argument (a macro imported with `{% from %}` sees only the
environment's globals, so these were global functions the templates called; issue #44 item 5):
the steps phrase, the temporal breakdown's note and where HTA's idle differs from ours
(report/figures.py), the roofline's top rows and the count of their bounds
(report/top_roofline.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainprof.report.figures import hta_idle_note, steps_shown, temporal_note
from trainprof.report.top_roofline import bounds_sentence, top_rows


@dataclass(frozen=True)
class RankText:
    steps: str  # "5 profiler steps" (its count shown with the rank's `steps` field)
    temporal_note: str  # HTA's window, said without steps for a trace that has none
    hta_note: str  # where HTA's idle differs from ours; "" where they agree or no device timeline is shown
    roof_rows: list  # (top-ops row, its roofline block) of the top-5 table; [] for an older record
    roof_bounds: str | None  # the count of their bounds; None without rows


def rank_text(r: Any, at: str) -> RankText:
    """`at`: the rank's path (analysis.ranks[0], optimised.ranks[0])."""
    rows = top_rows(r)
    # shown (and its figures captured) only where report.md shows the temporal breakdown
    hta = hta_idle_note(r.temporal_breakdown, at + ".temporal_breakdown") \
        if r.has_gpu and r.temporal_breakdown.span_us else ""
    return RankText(steps=steps_shown(r.steps, r.steps_from, at + ".steps"), temporal_note=temporal_note(r.steps),
                    hta_note=hta, roof_rows=rows, roof_bounds=bounds_sentence(rows) if rows else None)
