"""Issue #39 item 4, planted: the optimizer phase's split decides what the finding advises.

Base: HTA's step_based trace (GP100, 5 iterations, torch.optim.SGD, 16 optimizer kernels of
~2 µs). Each kernel launched inside an Optimizer.step range is stretched by 300 µs, the run
pausing behind it (every later event 300 µs later), so the phase is ~4.8 ms of a ~12.5 ms
timeline. Made of NCCL kernels under a custom optimizer class, the phase is
communication-bound: the finding gives overlap/bucketing advice and never a fused AdamW.
Left as compute kernels under SGD, the finding names SGD's own fused form, not AdamW's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plain import plain
from tests.unit.analysis.planting import complete, load, save
from trainprof.analysis import trace_report
from trainprof.diagnose.engine import diagnose_rank
from trainprof.trace import read_trace

STEPS = "hta_small_edge_cases/step_based_trace_2543932.json.gz"
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"
STRETCH_US = 300.0


def _stretch(doc: dict, k: dict, d: float) -> None:
    """Kernel k lasts d longer and the run pauses behind it: events from its end on move by
    d, events open across its end last d longer."""
    end = k["ts"] + k["dur"]
    for e in doc["traceEvents"]:
        if "ts" not in e or e is k:
            continue
        if e["ts"] >= end:
            e["ts"] += d
        elif e.get("ph") == "X" and e["ts"] + e.get("dur", 0) > end:
            e["dur"] += d
    k["dur"] += d


def _planted(tmp_path: Path, comm: bool, cls: str) -> dict:
    doc = load(STEPS)
    ev = complete(doc)
    opt = [e for e in ev if e["name"].startswith("Optimizer.step#") and e.get("cat") == "user_annotation"]
    launches = {e["args"]["correlation"]: e["ts"] for e in ev
                if e.get("cat") == "cuda_runtime" and "correlation" in (e.get("args") or {})}
    inside = [k for k in ev if k.get("cat") == "kernel" and any(
        o["ts"] <= launches.get(k["args"].get("correlation"), -1) <= o["ts"] + o["dur"] for o in opt)]
    assert len(inside) == 16  # the trace's optimizer kernels (3.2 per step)
    for k in sorted(inside, key=lambda k: -k["ts"]):  # last first: earlier stretches move the later kernels
        _stretch(doc, k, STRETCH_US)
        if comm:
            k["name"] = NCCL
    for e in ev:
        if e["name"] == "Optimizer.step#SGD.step":
            e["name"] = f"Optimizer.step#{cls}.step"
    return plain(trace_report.analyze_trace(read_trace(save(doc, tmp_path / "t.json")), file="t"))


def _optimizer_finding(rank: dict) -> dict:
    return next(f for f in diagnose_rank(rank) if f.id == "optimizer_bound")


def test_a_phase_of_nccl_kernels_under_a_custom_optimizer_gets_communication_advice(tmp_path):
    a = _planted(tmp_path, comm=True, cls="DistributedShampoo")
    o = a["optimizer"]
    assert o["classes"] == ["DistributedShampoo"]
    # the phase's parts add up to it, and communication is nearly all of it (16 × ~302 µs)
    parts = o["compute_us"] + o["communication_us"] + o["copy_us"] + o["idle_us"]
    assert parts == pytest.approx(o["phase_us"], rel=1e-9)
    assert o["communication_us"] >= 16 * STRETCH_US and o["compute_us"] == 0.0
    f = _optimizer_finding(a)
    assert f.bottleneck == "communication"
    assert "fused" not in f.fix.lower() or "would not help" in f.fix
    assert "AdamW" not in f.fix and "DistributedShampoo" in f.fix
    assert "communication-bound" in f.evidence
    # the gain: the phase's communication that no compute hides, as a share of the timeline
    assert f.estimated_gain_pct == pytest.approx(
        100 * o["communication_us"] / a["idle_breakdown"]["work_span_us"], abs=0.01)


def test_a_compute_phase_names_the_optimizers_own_fused_form(tmp_path):
    a = _planted(tmp_path, comm=False, cls="SGD")
    f = _optimizer_finding(a)
    assert a["optimizer"]["communication_us"] == 0.0
    assert f.bottleneck == "host overhead" and "compute-bound" in f.evidence
    assert "torch.optim.SGD(params, ..., fused=True)" in f.fix and "AdamW" not in f.fix


def test_a_custom_compute_bound_optimizer_is_not_told_to_use_adamw(tmp_path):
    a = _planted(tmp_path, comm=False, cls="EMAOptimizer")
    f = _optimizer_finding(a)
    assert "AdamW" not in f.fix and "fused=True" not in f.fix and "EMAOptimizer" in f.fix
