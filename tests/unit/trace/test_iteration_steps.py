"""Steps from the repeated iteration annotation when a trace has no ProfilerStep (trace/iterations.py).

Planted truth: real traces with every ProfilerStep#N event removed still carry their loop's
annotations (Optimizer.step, Optimizer.zero_grad); the steps found from those must be the
ProfilerStep ones — same count, same GPU step windows within 1%. Hand-written CPU-only loops
check each rule of the module docstring with answers worked on paper."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from trainprof.analysis.timeline.context import Context
from trainprof.analysis.timeline.temporal import per_step
from trainprof.trace import find_steps, link, read_trace

from tests.plain import plain

REAL = Path(__file__).resolve().parents[2] / "data" / "traces" / "real"


def _without_profiler_steps(rel: str, out: Path) -> Path:
    d = json.load(gzip.open(REAL / rel))
    # the CPU range and its GPU projection (gpu_user_annotation) both go
    d["traceEvents"] = [e for e in d["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    out.write_text(json.dumps(d))
    return out


@pytest.mark.parametrize("rel, source, anchor", [
    # zero_grad and Optimizer.step both top-level, 3 each: the tie goes to Optimizer.step, which
    # ends each iteration; 3 ProfilerSteps of 16-19 ms
    ("tracelens_mi300_resnet_ddp_8rank_rank0/resnet_act_checkpoint.json.gz", "Optimizer.step#SGD.step", "closes"),
    # Optimizer.step sits inside the user's "## optimizer ##" range here, so zero_grad (top-level,
    # first in each iteration) opens them; 3 ProfilerSteps of ~220 ms
    ("hta_ddp_2rank_nccl_a100/nccl_data.json.gz", "Optimizer.zero_grad#SGD.zero_grad", "opens"),
])
def test_removed_profiler_steps_are_found_again_from_the_loop_annotations(rel, source, anchor, tmp_path):
    truth = plain(per_step(Context.build(read_trace(REAL / rel))))
    ctx = Context.build(read_trace(_without_profiler_steps(rel, tmp_path / "planted.json")))
    assert (ctx.steps.pseudo, ctx.steps.source, ctx.steps.anchor) == (False, source, anchor)
    planted = plain(per_step(ctx))
    assert len(planted) == len(truth) == 3
    for t, p in zip(truth, planted):
        assert p["span_us"] == pytest.approx(t["span_us"], rel=0.01)  # step time within 1%
        assert p["compute_us"] == pytest.approx(t["compute_us"], rel=0.01)


# ---- hand-written CPU-only loops: answers on paper ---------------------------------------------

def _ev(name: str, ts: float, dur: float, cat: str = "cpu_op", tid: int = 1) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def _trace(tmp_path: Path, events: list[dict]):
    p = tmp_path / "loop.json"
    p.write_text(json.dumps({"traceEvents": events}))
    tr = read_trace(p)
    return tr, find_steps(tr, link(tr))


def _loop(n: int, period: float = 1000.0, data_wait=lambda k: 0.0) -> list[dict]:
    """n iterations: a marker "next_batch" (user annotation, 50 µs + a data wait) opens each,
    then four ops of 100 µs; a "## log ##" range runs twice per iteration, once right after the
    marker and once after the last op."""
    out, t = [], 0.0
    for k in range(n):
        w = data_wait(k)
        out.append(_ev("next_batch", t, 50 + w, "user_annotation"))
        out.append(_ev("## log ##", t + 60 + w, 10, "user_annotation"))
        for j in range(4):
            out.append(_ev("aten::mm", t + 100 + w + 150 * j, 100))
        out.append(_ev("## log ##", t + 800 + w, 10, "user_annotation"))
        t += period + w
    return out


def test_an_unknown_marker_opens_iterations_and_the_last_step_ends_with_its_work(tmp_path):
    tr, s = _trace(tmp_path, _loop(4))
    # "## log ##" is more frequent (8) but its periods alternate between 4 ops and 0 ops: the
    # median count is 2 and only half the periods lie within [1, 4] (< 75%): not an iteration.
    # next_batch: 4 periods' worth, 4 ops in each of the 3 full periods; nothing precedes its
    # first end (50 µs) and 4 ops follow its last start → opens
    assert (s.source, s.anchor, list(s.number)) == ("next_batch", "opens", [0, 1, 2, 3])
    assert list(s.cpu_start_us) == [0.0, 1000.0, 2000.0, 3000.0]
    # last step: to the end of its thread's ops that started by its 4th op (3000 + 550 + 100)
    assert list(s.cpu_end_us) == [1000.0, 2000.0, 3000.0, 3650.0]


def test_data_stalls_do_not_make_a_loop_irregular(tmp_path):
    # iterations 1 and 3 wait 2,000 µs for data: periods 1000, 3000, 1000, 3000, 1000 (a time
    # band of 0.5-2× the median would reject it), yet every period holds the same 4 ops
    tr, s = _trace(tmp_path, _loop(6, data_wait=lambda k: 2000.0 if k in (1, 3) else 0.0))
    assert s.source == "next_batch" and len(s) == 6
    assert np.diff(s.cpu_start_us).tolist() == [1000.0, 3000.0, 1000.0, 3000.0, 1000.0]


def test_a_range_around_the_body_is_each_step(tmp_path):
    ev = []
    for k in range(3):  # "## train_step ##" [k·1000, k·1000 + 900] holds two ops; 900 ≥ 0.5 × 1000
        t = 1000.0 * k
        ev += [_ev("## train_step ##", t, 900, "user_annotation"), _ev("aten::mm", t + 100, 300),
               _ev("aten::add", t + 500, 300)]
    tr, s = _trace(tmp_path, ev)
    assert (s.source, s.anchor) == ("## train_step ##", "range")
    assert list(s.cpu_start_us) == [0.0, 1000.0, 2000.0] and list(s.cpu_end_us) == [900.0, 1900.0, 2900.0]


def test_optimizer_step_closes_iterations(tmp_path):
    ev = []
    for k in range(3):  # forward ops [t, t+600), then Optimizer.step [t+700, t+800)
        t = 1000.0 * k + 50
        ev += [_ev("aten::mm", t, 600), _ev("Optimizer.step#AdamW.step", t + 700, 100, "user_annotation")]
    tr, s = _trace(tmp_path, ev)
    assert (s.source, s.anchor) == ("Optimizer.step#AdamW.step", "closes")
    # the first step starts with the first op (50), each later one at the previous step's end
    assert list(s.cpu_start_us) == [50.0, 850.0, 1850.0] and list(s.cpu_end_us) == [850.0, 1850.0, 2850.0]


def test_two_repeats_are_not_a_loop(tmp_path):
    tr, s = _trace(tmp_path, _loop(2))  # one period: nothing to check regularity against
    assert s.pseudo and s.source == "" and len(s) == 1


def test_an_inner_range_of_a_repeated_op_is_not_an_iteration(tmp_path):
    # "nccl:all_reduce" inside each of 4 repeated "autograd::engine::evaluate_function" ops: not top-level
    ev = []
    for k in range(4):
        t = 1000.0 * k
        ev += [_ev("autograd::engine::evaluate_function: X", t, 500), _ev("nccl:all_reduce", t + 10, 100,
                                                                          "user_annotation")]
    tr, s = _trace(tmp_path, ev)
    assert s.pseudo
