"""report.md's "Problems met" (templates/md/study.md.j2 `problems`) on a planted study: each
stage that was skipped or failed, a resumed configuration, a failed, a budget-cut and a
guard-rejected trial and skipped verify pairs each give their line, record text escaped; a
clean study says so. (No captured folder reaches these lines: they were string concatenation
before issue #30, and the template must say the same.)"""

from __future__ import annotations

import msgspec

from trainprof.recordtypes.study import Study
from trainprof.recordtypes.tune import Tune
from trainprof.report.templating import macro
from trainprof.report.view_study import study_view

TRIAL = {"knob": "k", "description": "", "config": {}, "ok": True, "accepted": False, "skipped": False}
def _tune() -> Tune:
    doc = {"schema": "trainprof.tune/1", "baseline": {"config": {}, "ok": True, "step_time_s": 1.0, "tokens_per_s": 100.0},
           "trials": [dict(TRIAL, knob="compile", ok=False, reason="crashed | badly"),
                      dict(TRIAL, knob="sdpa", ok=False, reason="time budget: 3 s left"),
                      dict(TRIAL, knob="fused", accuracy_ok=False, reason="loss off")],
           "best": {"config": {}, "command": "trainprof run", "knobs": [], "speedup": 1.0,
                    "verify": {"pairs": [], "skipped_pairs": 2, "skipped_reason": "time budget"}}}
    return msgspec.convert(doc, Tune)


def test_every_problem_of_a_planted_study_gets_its_line():
    study = {"config": {"steps": 8},
             "stages": [{"stage": "baseline", "status": "done", "steps_run": 2},
                        {"stage": "tune", "status": "skipped", "reason": "no time left"},
                        {"stage": "optimised", "status": "failed", "reason": "OOM *here*"}],
             "config_changes": ["steps 4 -> 8"]}
    study = msgspec.convert(study, Study)
    md = macro("md/study.md.j2", "problems")(study, study_view(study),
                                             [{"id": "contended_machine", "evidence": "load 3 > 2 cores"}], _tune())
    items = [x for x in md.splitlines() if x.startswith("* ")]
    assert items == [
        "* The machine was shared while the study ran (load 3 \\> 2 cores): single timings are noisy, so the tune "
        "keeps a knob only when it is ≥ min-gain faster and confirms the combination in alternating baseline/best pairs.",
        # 2 of the 8 steps asked for; the optimised stage failed, so no "as many steps" clause
        "* The baseline run stopped after 2 of 8 steps: its share of the budget.",
        "* Stage tune skipped: no time left.",
        "* Stage optimised failed: OOM \\*here\\*.",
        "* Resumed with a changed configuration (--resume-anyway): steps 4 -\\> 8; the stages run before the change "
        "used the old value.",
        "* Trial `compile` failed: crashed \\| badly; it was rejected and the ladder went on.",
        "* Trial `sdpa` failed: time budget: 3 s left; it was rejected and the ladder went on.",
        "* The budget ran out before 1 knob(s) were tried (sdpa); `trainprof study --resume --out DIR "
        "--budget-minutes M` gives M more minutes to try them.",
        "* 2 verify pair(s) not run: time budget.",
        "* Faster but rejected by the accuracy guard: fused.",
    ]
    assert md.endswith("repeats everything.\n\n")


def test_a_clean_study_says_nothing_went_wrong():
    clean = msgspec.convert({"stages": [{"stage": "baseline", "status": "done"}]}, Study)
    md = macro("md/study.md.j2", "problems")(clean, study_view(clean), [], None)
    assert "* No stage or trial failed, and no sign of machine contention was recorded." in md.splitlines()
