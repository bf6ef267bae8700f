"""A study's phrases, built once in Python for report.md (its `stages`, `optimised_run`,
`speedup` and `problems` macros take the view as an argument) and report.html: why each stage
was skipped or failed, which field holds what was spent, the speed-up and accuracy sentences
(report/study_text.py, as the terminal prints them), whether the folder claims a speed-up, and
the runs' and profiled step's ratios marked as no claim where it claims none. Before, the
macros called these as Jinja globals (a macro imported with `{% from %}` sees only globals);
now no template calls a phrase function (issue #44 item 5)."""

from __future__ import annotations

from dataclasses import dataclass

from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.study import Study
from trainprof.report.figures import show
from trainprof.report.study_md import spent_field, stage_note
from trainprof.report.study_text import accuracy_sentence, not_claimed, speedup_claimed, speedup_sentence


@dataclass(frozen=True)
class StudyView:
    claimed: bool  # the folder's ratios may be printed as speed-ups (always outside a study)
    unit: str = "tokens"  # what a step's batch counts (run.json's batch_unit)
    notes: tuple[str, ...] = ()  # each stage's note, in study.stages' order
    spent: str | None = None  # study.json's field for what was spent before the report
    speedup: str | None = None  # the one final speed-up sentence; None without study.speedup
    runs_ratio: str | None = None  # study.speedup.runs.speedup, marked "not claimed: " where none is
    profiled_ratio: str | None = None  # study.speedup.profiled.speedup, the same
    accuracy: str | None = None  # the guard's verdict on the two runs; None without study.accuracy


def study_view(study: Study | None, unit: str = "tokens") -> StudyView:
    """`unit`: what a step's batch counts (run.json's batch_unit)."""
    if study is None:
        return StudyView(claimed=speedup_claimed(None), unit=unit)
    claimed = speedup_claimed(study)
    sp = or_default(study.speedup, None)
    acc = or_default(study.accuracy, None)

    def ratio(v: object, field: str) -> str:
        return not_claimed(show(v or None, "x2", field), claimed)

    return StudyView(
        claimed=claimed, unit=unit, notes=tuple(stage_note(st, study) for st in study.stages), spent=spent_field(study),
        speedup=speedup_sentence(sp, acc or None, unit) if sp else None,
        runs_ratio=ratio(getattr(or_default(sp.runs, None), "speedup", None), "study.speedup.runs.speedup")
        if sp else None,
        profiled_ratio=ratio(getattr(or_default(sp.profiled, None), "speedup", None),
                             "study.speedup.profiled.speedup") if sp else None,
        accuracy=accuracy_sentence(acc) if acc else None)
