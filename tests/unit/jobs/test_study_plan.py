"""The study's plan: expected stage times from the budget and measurements, which
configuration is profiled as "optimised", time per iteration, resume from the journal."""

from __future__ import annotations

import json

import pytest

from trainprof.errors import UsageError
from trainprof.recordtypes.diff import Diff, StepTime
from trainprof.jobs.study import Study, StudyConfig, iteration_speedup, optimised_choice, start


def test_expected_times_before_and_after_the_baseline(tmp_path):
    s = Study(tmp_path, StudyConfig(budget_minutes=10, steps=30, profile_steps=1, tune_steps=10, verify_trials=2))
    # nothing measured: shares of 600 s; diff and report 5 s each, the tune the rest
    exp = s.expected_s()
    assert exp["baseline"] == pytest.approx(120.0) and exp["optimised"] == pytest.approx(120.0)
    assert exp["tune"] == pytest.approx(600 - 120 - 120 - 5 - 5)
    # baseline took 100 s with a 2 s median step: 31 steps = 62 s, fixed cost 38 s;
    # one trial = 38 + 10·2 = 58 s; the optimised run is expected to take 100 s;
    # tune = 600 − 100 − 100 − 10 = 390 s
    s.done["baseline"] = {"wall_s": 100.0, "step_time_median_s": 2.0}
    assert s.trial_estimate_s() == pytest.approx(58.0)
    exp = s.expected_s()
    assert exp["optimised"] == 100.0 and exp["tune"] == pytest.approx(390.0)
    # a budget already spent: the tune still runs its 2 baselines + 2 verify pairs = 6 trials
    s.done["baseline"]["wall_s"] = 900.0
    assert s.expected_s()["tune"] == pytest.approx(6 * (900 - 62 + 20))


def test_optimised_choice():
    base = {"preset": "tiny"}
    best = {"preset": "tiny", "dtype": "bf16"}
    t = {"baseline": {"config": base}, "best": {"knobs": ["bf16"], "config": best}}
    assert optimised_choice(t) == {"what": "best", "knobs": ["bf16"], "config": best}
    t["best"] = {"knobs": [], "config": base, "unconfirmed": {"knobs": ["bf16"], "config": best}}
    assert optimised_choice(t)["what"] == "unconfirmed"
    t["best"] = {"knobs": [], "config": base}
    assert optimised_choice(t) == {"what": "baseline", "knobs": [], "config": base}


def test_iteration_speedup_on_cpu_traces_and_runs():
    # CPU traces: host time of the profiled steps, 400,000 and 300,000 µs per step → 1.333×;
    # runs: median steps 0.5 s and 0.4 s → 1.25×
    ranks = [{"per_step": [{"cpu_us": 400_000.0}]}, {"per_step": [{"cpu_us": 200_000.0}, {"cpu_us": 400_000.0}]}]
    runs = [{"summary": {"step_time_median_s": 0.5}}, {"summary": {"step_time_median_s": 0.4}}]
    it = iteration_speedup(ranks, runs, Diff(step_time_us=StepTime(base=None, new=None, speedup=None)))
    assert it["profiled"]["speedup"] == pytest.approx(400_000 / 300_000)
    assert it["runs"]["speedup"] == pytest.approx(1.25)
    # a GPU diff wins for the profiled iteration
    it = iteration_speedup(ranks, runs, Diff(step_time_us=StepTime(base=10.0, new=5.0, speedup=2.0)))
    assert it["profiled"]["speedup"] == 2.0 and "GPU" in it["profiled"]["source"]


def test_resume_takes_the_journaled_config_and_only_a_larger_budget(tmp_path):
    out = tmp_path / "s"
    start(out, StudyConfig(budget_minutes=3, steps=5), resume=False)
    plan = json.loads((out / "journal.jsonl").read_text().splitlines()[0])
    assert plan["stage"] == "plan" and plan["config"]["steps"] == 5
    s = start(out, StudyConfig(steps=40, budget_minutes=1), resume=True, budget_given=True)
    assert s.cfg.steps == 5 and s.cfg.budget_minutes == 3  # 1 < 3: not lowered
    s = start(out, StudyConfig(budget_minutes=8), resume=True, budget_given=True)
    assert s.cfg.budget_minutes == 8
    s = start(out, StudyConfig(), resume=True, budget_given=False)  # the default 15 does not count
    assert s.cfg.budget_minutes == 3
    with pytest.raises(UsageError):
        start(out, StudyConfig(), resume=False)  # not empty
    with pytest.raises(UsageError):
        start(tmp_path / "none", StudyConfig(), resume=True)
