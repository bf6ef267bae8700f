"""report/view_study.py: a study's phrases built once, read back against a planted study."""

from __future__ import annotations

import msgspec

from trainprof.recordtypes.study import Study
from trainprof.report.view_study import study_view

STUDY = {"config": {"steps": 8}, "spent_s": 60.0,
         "stages": [{"stage": "baseline", "status": "done", "steps_run": 2},
                    {"stage": "tune", "status": "skipped", "reason": "no time left"},
                    {"stage": "optimised", "status": "done", "steps_run": 2}],
         "speedup": {"final": {"speedup": None, "source": "none"}, "runs": {"speedup": 1.2},
                     "profiled": {"speedup": 1.25, "per": "step"}}}


def test_a_study_claiming_no_speed_up_marks_each_ratio_and_notes_each_stage():
    v = study_view(msgspec.convert(STUDY, Study), "samples")
    # planted: 2 of the 8 steps asked for; no final speed-up, so the 1.2 and 1.25 ratios are no claims
    assert v.notes == ("stopped after 2 of 8 steps: its share of the budget", "no time left",
                       "2 steps, as many as the baseline ran")
    assert (v.claimed, v.runs_ratio, v.profiled_ratio) == (False, "not claimed: 1.20×", "not claimed: 1.25×")
    assert v.spent == "study.spent_s" and v.unit == "samples" and v.accuracy is None
    assert v.speedup.startswith("no speed-up claimed")
    claimed = msgspec.convert({**STUDY, "speedup": {**STUDY["speedup"], "final": {"speedup": 1.2, "source": "runs"}}},
                              Study)
    assert study_view(claimed).runs_ratio == "1.20×"


def test_outside_a_study_every_ratio_is_a_speed_up():
    v = study_view(None)
    assert v.claimed and v.notes == () and v.speedup is None
