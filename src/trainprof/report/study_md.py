"""The two study phrases report.md (report/templates/md/study.md.j2), report.html and the
terminal share: which study.json field holds what was spent before the report, and why a
stage was skipped or failed (or that a run stopped at its share of the budget)."""

from __future__ import annotations

from trainprof.recordtypes.base import known, or_default
from trainprof.recordtypes.study import Stage, Study


def spent_field(study: Study) -> str:
    """study.json's field for what was spent before the report stage (the report's own time
    is added after it writes)."""
    return "study.spent_before_s" if known(study.spent_before_s) else "study.spent_s"


def stage_note(row: Stage, study: Study) -> str:
    """Why a stage was skipped or failed, or that a run stopped at its share of the budget."""
    if row.reason:
        return row.reason
    ran, asked = or_default(row.steps_run, None), study.config.get("steps")
    if row.stage == "baseline" and ran is not None and asked and ran < asked:
        return f"stopped after {ran} of {asked} steps: its share of the budget"
    if row.stage == "optimised" and ran is not None:
        return f"{ran} steps, as many as the baseline ran"
    return ""
