"""The study's budget as one deadline for every stage, with a fake clock and fake runs whose
steps advance it (study_fakes.py): estimates from the baseline, stages skipped with their
reason, runs and trials stopped at a step boundary or killed, spent ≤ budget + one step,
and the budget of a resumed study."""

from __future__ import annotations

import json

import pytest
from study_fakes import T0, Clock, Machine

from trainprof import jsonl
from trainprof.jobs.study import optimised_choice, start
from trainprof.jobs.study_config import StudyConfig
from trainprof.jobs.study_budget import run_estimate_s, spent_in_journal, trial_estimate_s
from trainprof.jobs.tune import KILL_GRACE_S

from tests.plain import plain

KNOBS = ("gc_disable", "compile", "pad_vocab")


def _study(tmp_path, m: Machine, **cfg):
    c = StudyConfig.from_record({"budget_minutes": 6, "steps": 30, "tune_steps": 10, "verify_trials": 1,
                                 "knobs": KNOBS, "device": "cpu", **cfg})
    return start(tmp_path / "s", c, resume=False, clock=m.clock, launch=m.launch, trial_runner=m.trial,
                 heartbeat_s=0)


def _tune(tmp_path) -> dict:
    return json.loads((tmp_path / "s" / "tune" / "tune.json").read_text())


def test_estimates_from_the_baseline():
    # baseline: 167 s of wall, 3 steps of 20 s run: fixed cost 167 − 3·20 = 107 s
    b = {"wall_s": 167.0, "steps_run": 3, "step_time_median_s": 20.0}
    assert run_estimate_s(b, 3) == pytest.approx(167.0)
    # a trial: the fixed cost without the 1 + 2 profiler steps (107 − 60 = 47) + 10 steps of 20 s
    assert trial_estimate_s(b, tune_steps=10, profile_steps=1) == pytest.approx(247.0)


def test_spent_is_summed_over_the_sessions_of_the_journal():
    # session 1 wrote 10 then 30 s; session 2 wrote 5 s then a heartbeat at 40 s: 30 + 40
    entries = [{"stage": "plan"}, {"stage": "session"}, {"session_spent_s": 10.0}, {"session_spent_s": 30.0},
               {"stage": "session"}, {"session_spent_s": 5.0}, {"stage": "clock", "session_spent_s": 40.0}]
    assert spent_in_journal(entries) == pytest.approx(70.0)
    # a journal from before sessions were recorded: its finished stages' wall times
    assert spent_in_journal([{"stage": "plan"}, {"stage": "baseline", "status": "done", "wall_s": 77.0},
                             {"stage": "tune", "status": "done", "wall_s": 114.0}]) == pytest.approx(191.0)


def test_a_slow_step_keeps_the_study_in_its_budget(tmp_path):
    """20 s steps (a loaded 2-core machine) in a 6-minute budget: the baseline stops at its
    share, nothing else fits, and the report says why."""
    m = Machine(Clock(), step_s=20.0)
    doc = plain(_study(tmp_path, m).run_all())  # study.json as its file holds it
    st = {s["stage"]: s for s in doc["stages"]}
    # baseline: --stop-at = its share 0.25·360 = 90 s − 8 s for the child's analysis = T0 + 82.
    # Start-up 5 s, then after each step from the 3rd (2 warm-up + 1): stop when
    # now + 20·(1 + tail 3·1.3 + 8·0.35 = 6.7) > 82: at 65 s, 65 + 154 > 82: 3 steps.
    # Then 3 profiler steps (60 s), 8 validation batches (8·0.25·20 = 40 s), 2 s: wall 167 s.
    assert st["baseline"]["steps_run"] == 3 and st["baseline"]["wall_s"] == pytest.approx(167.0)
    # the tune's least: 3 trials of 247 s = 741 s = 12.3 min; left 360 − 167 = 193 s less the
    # optimised run (167), diff and report (10 + 10) and the kill grace (10) kept after it
    assert st["tune"]["status"] == "skipped" and "needs ~12.3 min" in st["tune"]["reason"]
    # the time to the deadline as it is (193 s = 3.2 min), the 197 s kept beside it: it read
    # "0 s left before the deadline" (193 − 197 clamped at 0) with 3.2 min to go (issue #37 item 5.6)
    assert st["tune"]["reason"].endswith("3.2 min left before the deadline and 3.3 min to keep for the stages "
                                         "after it"), st["tune"]["reason"]
    assert st["optimised"]["reason"] == "needs the tune stage, which was skipped"
    assert st["diff"]["reason"] == "needs the optimised stage, which was skipped"
    assert st["report"]["status"] == "done"
    assert doc["budget_s"] == 360.0 and doc["spent_s"] == pytest.approx(167.0)
    md = (tmp_path / "s" / "report.md").read_text()
    # (`~` escaped in Markdown, as every record string's: GitHub strikes out text between tildes)
    assert "stopped after 3 of 30 steps: its share of the budget" in md and "needs \\~12.3 min" in md
    # study.json is recordtypes/study.Study encoded once: read back typed, it encodes to the same bytes
    from trainprof import jsontext
    from trainprof.recordtypes.base import load
    from trainprof.recordtypes.study import Study

    text = (tmp_path / "s" / "study.json").read_text()
    assert jsontext.dumps(load(tmp_path / "s" / "study.json", Study)) + "\n" == text
    assert list(json.loads(text)["stages"][0]) == ["stage", "status", "wall_s", "expected_s", "steps_run"]


def test_a_trial_stuck_at_the_deadline_is_killed_and_the_rest_still_fits(tmp_path):
    """1 s steps, but compile's trial spends 200 s starting: killed 10 s after the tune's
    deadline (before a step could stop it), not journaled; the optimised run still fits."""
    m = Machine(Clock(), step_s=1.0, slow_start={"compile": 200.0}, speed={"gc_disable": 1.2})
    doc = plain(_study(tmp_path, m).run_all())  # study.json as its file holds it
    # baseline: 5 + 30 + 3 + 2 + 2 = 42 s; a trial: 42 − 30 − 3 + 10 = 19 s (measured: 5 + 10 + 2 + 2)
    # tune deadline: 360 − (optimised 42 + diff 10 + report 10 + grace 10) = 288; trials at
    # 42 → 61 (baseline) → 80 (seed 2) → 97 (gc_disable, 1.2×: 5 + 10/1.2 + 2/1.2 + 2 = 17 s),
    # compile from 97: start-up ends at 302 > the kill at 288 + 10 = 298: killed at 298
    t = {x["knob"]: x for x in _tune(tmp_path)["trials"]}
    assert t["gc_disable"]["accepted"] and "still running at the deadline" in t["compile"]["reason"]
    assert t["pad_vocab"]["skipped"] and t["pad_vocab"]["reason"].startswith("time budget spent: 0 s left")
    journal = (tmp_path / "s" / "tune" / "journal.jsonl").read_text()
    assert '"compile"' not in journal  # a resume with more time runs it
    verify = _tune(tmp_path)["best"]["verify"]
    assert verify["pairs"] == [] and verify["skipped_pairs"] == 1
    st = {s["stage"]: s for s in doc["stages"]}
    assert st["tune"]["wall_s"] == pytest.approx(298.0 - 42.0)
    # optimised (gc_disable, 1.2×): 5 + (30 + 3 + 2)/1.2 + 2 = 36.2 s, all 30 steps, from 298
    assert st["optimised"]["steps_run"] == 30 and doc["spent_s"] == pytest.approx(298.0 + 36.0 + 1 / 6, abs=1e-3)
    assert doc["speedup"]["final"]["source"] == "runs"  # no verify pair: the two runs' tokens/s
    assert doc["speedup"]["final"]["speedup"] == pytest.approx(1.2)


@pytest.mark.parametrize("step_s, stuck_s", [(0.5, 0.0), (3.0, 0.0), (7.0, 400.0), (40.0, 0.0), (150.0, 0.0)])
def test_spent_never_passes_the_budget_by_more_than_a_step(tmp_path, step_s, stuck_s):
    m = Machine(Clock(), step_s=step_s, slow_start={"compile": stuck_s}, speed={"gc_disable": 1.2})
    doc = plain(_study(tmp_path, m).run_all())  # study.json as its file holds it
    assert doc["spent_s"] <= doc["budget_s"] + max(step_s, KILL_GRACE_S)
    assert (tmp_path / "s" / "report.md").is_file()  # always written: every stage keeps its time


def test_a_resumed_study_has_what_is_left_or_the_new_budget_from_now(tmp_path):
    m = Machine(Clock(), step_s=20.0)
    _study(tmp_path, m).run_all()  # spent 167 of 360 s (above)
    m.clock.sleep(3600)  # time between the sessions is not the study's
    again = start(tmp_path / "s", StudyConfig(), resume=True, given=set(), clock=m.clock, launch=m.launch,
                  trial_runner=m.trial, heartbeat_s=0)
    b = again.budget
    assert (b.total_s, b.spent_before_s, b.left_s()) == pytest.approx((360.0, 167.0, 193.0))
    assert "2.8 of the 6 min budget spent before, 3.2 min left" in b.note
    # --budget-minutes 20 on the resume: 20 minutes from now, 167 + 1200 s in all; the tune fits now
    more = start(tmp_path / "s", StudyConfig(), resume=True, given=set(), budget_minutes=20, clock=m.clock,
                 launch=m.launch, trial_runner=m.trial, heartbeat_s=0)
    assert more.budget.total_s == pytest.approx(1367.0) and more.budget.left_s() == pytest.approx(1200.0)
    assert "a new budget of 20 min from now, after 2.8 min spent before" in more.budget.note
    doc = plain(more.run_all())
    assert [s["status"] for s in doc["stages"]] == ["done"] * 5
    assert doc["budget_s"] == pytest.approx(1367.0) and doc["spent_s"] <= doc["budget_s"]
    sessions = [e for e in jsonl.read_jsonl(tmp_path / "s" / "journal.jsonl") if e.get("stage") == "session"]
    assert [round(e["budget_s"]) for e in sessions] == [360, 360, 1367]


def test_optimised_choice():
    from msgspec.structs import replace

    from trainprof.recordtypes.tune import Tune, TuneBaseline, TuneBest, Unconfirmed

    base = {"preset": "tiny"}
    best = {"preset": "tiny", "dtype": "bf16"}
    t = Tune(baseline=TuneBaseline(config=base, step_time_s=1.0, tokens_per_s=10.0), trials=[],
             best=TuneBest(knobs=["bf16"], config=best, speedup=1.2))
    assert optimised_choice(t) == {"what": "best", "knobs": ["bf16"], "config": best}
    t = replace(t, best=TuneBest(knobs=[], config=base, speedup=1.0,
                                 unconfirmed=Unconfirmed(knobs=["bf16"], config=best)))
    assert optimised_choice(t)["what"] == "unconfirmed"
    t = replace(t, best=TuneBest(knobs=[], config=base, speedup=1.0))
    assert optimised_choice(t) == {"what": "baseline", "knobs": [], "config": base}


def test_start_refuses_a_used_folder_and_a_missing_journal(tmp_path):
    from trainprof.errors import UsageError

    start(tmp_path / "s", StudyConfig.from_record({"steps": 5}), resume=False, clock=Clock())
    with pytest.raises(UsageError):
        start(tmp_path / "s", StudyConfig(), resume=False)  # not empty
    with pytest.raises(UsageError):
        start(tmp_path / "none", StudyConfig(), resume=True)
    assert T0 > 0
