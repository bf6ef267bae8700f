"""The two study phrases report.md (report/templates/md/study.md.j2), report.html and the
terminal share: which study.json field holds what was spent before the report, and why a
stage was skipped or failed (or that a run stopped at its share of the budget)."""

from __future__ import annotations


def spent_field(study: dict) -> str:
    """study.json's field for what was spent before the report stage (the report's own time
    is added after it writes)."""
    return "study.spent_before_s" if study.get("spent_before_s") is not None else "study.spent_s"


def stage_note(row: dict, study: dict) -> str:
    """Why a stage was skipped or failed, or that a run stopped at its share of the budget."""
    if row.get("reason"):
        return row["reason"]
    ran, asked = row.get("steps_run"), (study.get("config") or {}).get("steps")
    if row["stage"] == "baseline" and ran is not None and asked and ran < asked:
        return f"stopped after {ran} of {asked} steps: its share of the budget"
    if row["stage"] == "optimised" and ran is not None:
        return f"{ran} steps, as many as the baseline ran"
    return ""
