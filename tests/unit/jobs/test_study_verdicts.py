"""The study's two conclusions on planted records: the accuracy line is the guard's verdict
with its tolerance (never "bounded by the seed-to-seed noise" unless the guard says so), and
the speed-up is tokens/s at equal work, one final figure from the verify pairs."""

from __future__ import annotations

import copy

import msgspec
import pytest
from study_fakes import RUN

from trainprof.jobs.study_verdicts import accuracy_verdict, speedup
from trainprof.recordtypes.analysis import Rank
from trainprof.recordtypes.diff import Diff, StepTime
from trainprof.recordtypes.run import RunRecord
from trainprof.recordtypes.tune import Tolerance, Tune
from trainprof.report.study_text import accuracy_sentence, speedup_sentence
from trainprof.tune.guard import Guard


def _run(losses: list[float], val: float, tokens: int = 4096, step_s: float = 0.6) -> RunRecord:
    r = copy.deepcopy(RUN)
    r["steps"] = [{**RUN["steps"][0], "step": i, "loss": x, "tokens": tokens, "step_time_s": step_s}
                  for i, x in enumerate(losses)]
    r["summary"].update(val_loss=val, tokens_per_step=tokens, step_time_median_s=step_s)
    return msgspec.convert(r, RunRecord)


def _tune(pairs: list[float] = (), **best) -> Tune:
    trial = {"ok": True, "accepted": True, "skipped": False, "step_time_s": 1.0, "tokens_per_s": 1.0}
    doc = {"baseline": {"config": {}, "step_time_s": 0.6, "tokens_per_s": 6826.7},
           "tolerance": {"trajectory_tol": 0.3, "val_tol": 0.078},
           "trials": [{**trial, "knob": "batch_size", "same_math": False},
                      {**trial, "knob": "bf16", "same_math": True}],
           "best": {"config": {}, "speedup": 1.0, "knobs": ["batch_size"],
                    "verify": {"pairs": [{"base_tokens_per_s": 1000.0, "best_tokens_per_s": 1000.0 * r, "ratio": r}
                                         for r in pairs],
                               "speedup_median": sorted(pairs)[len(pairs) // 2] if pairs else None}, **best}}
    return msgspec.convert(doc, Tune)


BASE = [5.0, 4.5, 4.0, 3.6]


def test_the_accuracy_line_is_the_guard_s_verdict_with_its_tolerance():
    tune = _tune()
    base, new = _run(BASE, 3.004), _run(BASE, 3.225)
    acc = accuracy_verdict(tune, base, new, ["batch_size"])
    # the guard itself on the same runs: 3.225 > 3.004 + 0.078 → rejected (validation loss only:
    # batch_size changes the data per step, so the trajectory is not compared)
    ok, why = Guard().check({"losses": BASE, "val_loss": 3.225}, {"losses": BASE, "val_loss": 3.004},
                            Tolerance(trajectory_tol=0.3, val_tol=0.078), same_math=False)
    assert (acc["verdict"] == "accepted") == ok is False and acc["reason"] == why
    assert accuracy_sentence(acc) == ("validation loss 3.004 → 3.225 (Δ +0.221): outside the guard's "
                                      "tolerance 0.078 → rejected")
    # 3.004 → 3.050: Δ 0.046 ≤ 0.078
    acc = accuracy_verdict(tune, base, _run(BASE, 3.050), ["batch_size"])
    assert accuracy_sentence(acc) == ("validation loss 3.004 → 3.050 (Δ +0.046): within the guard's "
                                      "tolerance 0.078 → accepted")
    # bf16 keeps the maths: every loss 0.4 off is a trajectory moved 0.4 > 0.3
    acc = accuracy_verdict(tune, base, _run([x + 0.4 for x in BASE], 3.010), ["bf16"])
    assert acc["verdict"] == "rejected" and acc["same_math"] and acc["loss_deviation"] == pytest.approx(0.4)
    assert accuracy_sentence(acc).endswith("loss trajectory moved 0.400 from the baseline's (tolerance 0.300, "
                                           "the seed-to-seed noise) → rejected")
    # nothing to judge by: no tune, or runs of different lengths
    assert accuracy_verdict(None, base, new, [])["verdict"] is None
    acc = accuracy_verdict(tune, base, _run(BASE[:3], 3.1), ["batch_size"])
    assert acc["verdict"] is None and "not comparable: the runs trained 4 and 3 steps" in accuracy_sentence(acc)



def _cpu_rank(cpu_us: float) -> Rank:
    """A CPU trace's rank record with one profiled step of `cpu_us` host time (what speedup reads)."""
    return msgspec.convert({"rank": 0, "file": "t", "has_gpu": False, "per_step": [{"cpu_us": cpu_us}],
                            "temporal_breakdown": {}, "idle_breakdown": {}, "top_ops": [], "top_kernels": [],
                            "roofline": {}, "roofline_points": []}, Rank)

def test_speed_up_at_equal_work_micro_batch_16_to_32():
    tune = _tune([1.18, 1.25, 1.22])
    # baseline: 16 × 256 = 4096 tokens in 0.6 s = 6,826.7 tokens/s; micro-batch 32: 8192 in 1.0 s
    # = 8,192 tokens/s: 1.2× the work per second, although each step takes 1.67× as long
    runs = [_run(BASE, 3.0, tokens=4096, step_s=0.6), _run(BASE, 3.0, tokens=8192, step_s=1.0)]
    # profiled (CPU traces): 600 ms and 1,000 ms host time per step: per token 146.5 and 122.1 µs
    ranks = [_cpu_rank(600_000.0),
             _cpu_rank(1_000_000.0)]
    sp = speedup(tune, {"what": "best"}, runs, ranks, Diff(step_time_us=StepTime()))
    assert sp["runs"]["speedup"] == pytest.approx(8192 / 1.0 / (4096 / 0.6))  # 1.2
    assert sp["profiled"]["per"] == "token" and sp["profiled"]["speedup"] == pytest.approx(1.2)
    assert sp["profiled"]["base_us_per_token"] == pytest.approx(600_000 / 4096)
    assert not sp["equal_tokens_per_step"]
    # the one final figure: the median of the verify pairs' ratios 1.18, 1.22, 1.25
    assert sp["final"] == {"speedup": 1.22, "source": "verify pairs", "pairs": [1.18, 1.25, 1.22], "min": None,
                           "max": None, "base_tokens_per_s": [1000.0] * 3,
                           "best_tokens_per_s": pytest.approx([1180.0, 1250.0, 1220.0])}
    assert speedup_sentence(sp) == ("1.22× the baseline's tokens/s at equal work (median of 3 alternating verify "
                                    "pairs: 1.18×, 1.25×, 1.22×)")
    # a speed-up the guard rejected says so in the same sentence (terminal, report.md, report.html)
    rejected = {"verdict": "rejected", "reason": "validation loss 3.127 vs 3.010", "val_base": 3.010,
                "val_new": 3.127, "val_delta": 0.117, "val_tol": 0.078}
    assert speedup_sentence(sp, rejected).startswith("1.22× the baseline's tokens/s")
    assert "the accuracy guard rejected the optimised run" in speedup_sentence(sp, rejected)
    assert speedup_sentence(sp, {**rejected, "verdict": "accepted"}) == speedup_sentence(sp)
    # per step only when the steps hold the same tokens: 600 → 500 ms is 1.2× per step
    same = speedup(tune, {"what": "best"}, [runs[0], _run(BASE, 3.0, tokens=4096, step_s=0.5)],
                   [ranks[0], _cpu_rank(500_000.0)], Diff(step_time_us=StepTime()))
    assert same["profiled"]["per"] == "step" and same["profiled"]["speedup"] == pytest.approx(1.2)
    # no pairs: the two runs' tokens/s, said to be single runs; no knob kept: no figure at all
    none = speedup(_tune([]), {"what": "best"}, runs, ranks, Diff(step_time_us=StepTime()))
    assert none["final"]["source"] == "runs" and "single runs" in speedup_sentence(none)
    base = speedup(tune, {"what": "baseline"}, runs, ranks, Diff(step_time_us=StepTime()))
    assert base["final"]["speedup"] is None and speedup_sentence(base).startswith("no speed-up claimed: no knob")


def _speedup_md(doc: dict) -> str:
    """report.md's speed-up part of a study holding `doc` (its macro, with the study's view)."""
    from trainprof.recordtypes.study import Study
    from trainprof.report.templating import macro
    from trainprof.report.view_study import study_view

    study = msgspec.convert(doc, Study)
    return macro("md/study.md.j2", "speedup")(study, study_view(study))


def test_the_report_prints_the_per_token_comparison_never_a_ratio_of_unlike_steps():

    tune = _tune([1.18, 1.25, 1.22])
    runs = [_run(BASE, 3.0, tokens=4096, step_s=0.6), _run(BASE, 3.0, tokens=8192, step_s=1.0)]
    ranks = [_cpu_rank(600_000.0),
             _cpu_rank(1_000_000.0)]
    md = _speedup_md({"speedup": speedup(tune, {"what": "best"}, runs, ranks, Diff(step_time_us=StepTime()))})
    assert "**Speed-up: 1.22× the baseline's tokens/s at equal work" in md
    assert "host time of the profiled step (CPU trace), per token | 146.5 µs | 122.1 µs | 1.20× |" in md
    assert "0.60×" not in md and "1.67×" not in md  # 600 / 1000 ms: steps of unlike work are never divided


def test_where_no_speed_up_is_claimed_no_ratio_reads_as_one():
    # issue #37 item 5.5: "no speed-up claimed" printed beside 1.41×/1.55×/1.88× (the verify
    # pairs), the runs' and the profiled step's ratios, as if they were claims

    tune = _tune([1.41, 1.55, 1.88], unconfirmed={"knobs": ["bf16"], "reason": "unstable machine: 1.62× spread"})
    # the verify pairs spread too widely: the tune's verdict is an unstable machine
    tune = msgspec.structs.replace(tune, best=msgspec.structs.replace(
        tune.best, verify=msgspec.structs.replace(tune.best.verify, verdict="unstable machine")))
    runs = [_run(BASE, 3.0, step_s=0.6), _run(BASE, 3.0, step_s=0.5)]
    ranks = [_cpu_rank(600_000.0), _cpu_rank(500_000.0)]
    sp = speedup(tune, {"what": "unconfirmed"}, runs, ranks, Diff(step_time_us=StepTime()))
    assert sp["final"]["speedup"] is None
    text = speedup_sentence(sp)
    assert text.startswith("no speed-up claimed: unstable machine")
    assert "(not claimed: the verify pairs measured 1.41×, 1.55×, 1.88×)" in text
    md = _speedup_md({"speedup": sp})
    # 0.6 → 0.5 s: 1.20× in tokens/s and per profiled step, each marked as no claim
    assert "| measured as | baseline | optimised | ratio |" in md
    assert "| not claimed: 1.20× |" in md and "| 1.20× |" not in md
    # where one is claimed, the column is the speed-up
    claimed = speedup(_tune([1.18, 1.25, 1.22]), {"what": "best"}, runs, ranks, Diff(step_time_us=StepTime()))
    md = _speedup_md({"speedup": claimed})
    assert "| measured as | baseline | optimised | speed-up |" in md and "| 1.20× |" in md


def test_a_study_quotes_one_tokens_per_second_the_median_step_s(tmp_path):
    # issue #37 item 5.5: report.md gave each run two tokens/s, run.json's (over the mean step)
    # and the speed-up's (of the median step); report.html's card the mean one
    import json
    import shutil

    from study_fakes import REPORTS

    from trainprof.report.html import render_html
    from trainprof.report.loader import load_folder
    from trainprof.report.markdown import render_markdown

    base = _run(BASE, 3.0, step_s=0.6)
    # the mean step (0.75 s) is not the median (0.6 s): 5,461 tokens/s over the mean, 6,827 of the median
    doc = json.loads(base.to_json())
    doc["summary"].update(step_time_s=0.75, tokens_per_s=4096 / 0.75)
    new = _run(BASE, 3.0, step_s=0.5)
    sp = speedup(_tune([1.18, 1.25, 1.22]), {"what": "best"}, [base, new], [_cpu_rank(6e5), _cpu_rank(5e5)],
                 Diff(step_time_us=StepTime()))
    d = tmp_path / "study"
    shutil.copytree(REPORTS / "cpu_run", d)
    (d / "run.json").write_text(json.dumps(doc))
    (d / "optimised").mkdir()
    (d / "optimised" / "run.json").write_text(new.to_json())
    study = {"schema": "trainprof.study/1", "config": {"steps": 4}, "budget_s": 900.0, "spent_s": 60.0,
             "stages": [{"stage": s, "status": "done", "wall_s": 10.0, "expected_s": 10.0}
                        for s in ("baseline", "tune", "optimised", "diff", "report")],
             "records": {"run": "run.json", "analysis": "analysis.json", "optimised_run": "optimised/run.json"},
             "speedup": sp}
    (d / "study.json").write_text(json.dumps(study))
    b = load_folder(d)
    assert b.study is not None and b.optimised_run is not None
    md, html = render_markdown(b), render_html(b)
    for text in (md, html):
        assert "6,827" in text  # the baseline's tokens/s of its median step, study.speedup.runs
        assert "5,461" not in text  # run.json's tokens/s over the mean step: a second figure for one run
    assert "| median step | tokens/s of the median step |" in md
