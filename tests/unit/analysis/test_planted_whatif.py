"""Planted truths (issue #28 items 3-4, issue #32): real traces edited to a known answer, and
the what-if, critical path, idle causes, clock and findings must find it.

Each edit is tests/unit/analysis/planting.py's: a shifted GPU clock, or a host call inserted
into a thread with the rest of the run paused behind it. Times µs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.unit.analysis.planting import GPU_CATS, complete, corr, insert_call, load, save, shift_gpu
from tests.plain import plain
from tests.unit.analysis.test_critical_path import context, critical_path, ev, kernel, launch
from trainprof.analysis.graph.clock import bounds
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.graph.depgraph import build_graph
from trainprof.analysis import trace_report
from trainprof.analysis.graph import whatif
from trainprof.analysis.graph.whatif import Edit, edited_weights, retime
from trainprof.diagnose.engine import diagnose_rank
from trainprof.trace import Kind, read_trace

BERT = "tracelens_h100_hf_inference/gaunernst_bert-small-uncased__1016001.json.gz"  # 65 KB, 1 step
EVENT_SYNC = "hta_small_edge_cases/cuda_event_sync/event_sync_trace.json.gz"  # 3 KB
STEPS = "hta_small_edge_cases/step_based_trace_2543932.json.gz"  # 21 KB, GP100, host-bound
DDP = "hta_ddp_2rank_nccl_a100/nccl_data.json.gz"  # 750 KB, A100 DDP
RESNET = "hta_resnet_v100_ns_timeunit/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"  # GPU 98% busy
GLOO = "hta_small_edge_cases/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"  # CPU gloo job


def analyze_trace(trace, **kw):  # the rank's record as analysis.json holds it
    return plain(trace_report.analyze_trace(trace, **kw))


def project(*a, **kw):
    return plain(whatif.project(*a, **kw))


def _ctx(doc: dict, tmp_path: Path, name: str = "t.json") -> Context:
    return Context.build(read_trace(save(doc, tmp_path / name)))


@pytest.mark.parametrize("rel", [BERT, EVENT_SYNC])
@pytest.mark.parametrize("offset_us", [8000.0, -3000.0])
def test_a_shifted_gpu_clock_is_found_within_5_percent_and_corrected(tmp_path, rel, offset_us):
    base = analyze_trace(read_trace(save(load(rel), tmp_path / "a.json")), file="a")
    got = bounds(_ctx(shift_gpu(load(rel), offset_us), tmp_path))
    # +8 ms: syncs return before their work "ends" (L > 0); the estimate is the smallest delay
    # of a launch that found its stream idle, i.e. 8 ms + one true launch latency (~5-10 µs).
    # −3 ms: work "starts before its launch" (U < 0), the estimate is U.
    assert got.offset_us == pytest.approx(offset_us, rel=0.05)
    b = analyze_trace(read_trace(tmp_path / "t.json"), file="b")
    assert any(n.startswith("GPU clock offset corrected") for n in b["notes"])
    # after the correction the offset is billed to nothing: the idle causes and the launch
    # latency are the unshifted trace's, to within one launch latency
    for c in ("host_launch", "host_sync", "other", "idle"):
        assert b["idle_breakdown"][f"{c}_us"] == pytest.approx(base["idle_breakdown"][f"{c}_us"], abs=20.0)
    assert b["critical_path"]["graph"]["launch_latency_us"] <= base["critical_path"]["graph"]["launch_latency_us"]
    # without the correction the launch latency would be the offset itself (8 ms)
    assert bounds(_ctx(load(rel), tmp_path, "u.json")).offset_us == 0.0  # the real trace: no offset


def test_allocator_churn_takes_the_planted_share_of_idle(tmp_path):
    doc = load(STEPS)
    a = analyze_trace(read_trace(save(doc, tmp_path / "a.json")), file="a")
    # the trace has no ProfilerStep: its 5 steps end at each Optimizer.step (trace/iterations.py),
    # and the what-if's step time is the mean period after the first (a warm-up step). Plant in
    # step 1, a steady step: the longest host-launch gap that starts inside it
    assert a["steps"] == 5
    s1 = a["critical_path"]["steps"][1]
    lo, hi = s1["start_us"], s1["start_us"] + s1["length_us"]
    iv = a["idle_breakdown"]["intervals"]
    i = max((k for k, c in enumerate(iv["cause"]) if c == "host_launch" and lo <= iv["start_us"][k] < hi),
            key=lambda k: iv["dur_us"][k])
    g1 = iv["start_us"][i] + iv["dur_us"][i]
    nxt = next(e for e in complete(doc) if e.get("cat") in GPU_CATS and e["ts"] == g1)
    call = next(e for e in complete(doc) if e.get("cat") == "cuda_runtime" and corr(e) == corr(nxt))
    # plant: the host spends 5 ms in cudaFree right before launching the work that ended the
    # longest host-launch gap; the run pauses behind it
    x = 5000.0
    b = analyze_trace(read_trace(save(insert_call(doc, pid=call["pid"], tid=call["tid"], ts=call["ts"], dur=x,
                                                  name="cudaFree"), tmp_path / "b.json")), file="b")
    ib0, ib = a["idle_breakdown"], b["idle_breakdown"]
    # that gap + 5000 µs is the allocator's now; the other causes keep theirs, less that gap
    assert ib["allocator_us"] == iv["dur_us"][i] + x and ib["idle_us"] == ib0["idle_us"] + x
    assert ib["host_launch_us"] == ib0["host_launch_us"] - iv["dur_us"][i]
    (f,) = [f for f in diagnose_rank(b) if f.id == "allocator_churn"]
    share = round(100 * ib["allocator_us"] / ib["idle_us"])  # (gap + 5000) / (idle + 5000)
    assert f"({share}% of its idle time" in f.evidence and "1 cudaFree (5.0 ms)" in f.evidence
    # without the allocator step 1 gets its 5 ms back: the mean period after the first step, over
    # the 4 steady periods (steps 1-4: last end − step 0's end, ÷ 4), falls by 5000 / 4 = 1250 µs
    s = next(s for s in b["whatif"]["scenarios"] if s["label"] == "remove allocator")
    assert s["measured_step_us"] - s["projected_step_us"] == pytest.approx(x / 4, abs=1e-3)
    assert f.projected_gain_pct == pytest.approx(s["gain_pct"], abs=0.01)
    assert f.projected_gain_pct <= f.estimated_gain_pct + 0.01
    assert b["critical_path"]["steps"][1]["share_us"]["allocator"] == pytest.approx(x)


@pytest.mark.parametrize("marker", [True, False], ids=["stream-sync-marker", "no-marker"])
def test_removing_a_collective_shortens_the_sync_that_waited_for_it(tmp_path, marker):
    doc = load(DDP)
    ks = sorted((e for e in complete(doc) if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel_AllReduce")),
                key=lambda e: e["ts"])
    k = ks[4]  # the first step's last all-reduce (1.69 ms), launched by autograd's thread
    call = next(e for e in complete(doc) if e.get("cat") == "cuda_runtime" and corr(e) == corr(k))
    # plant: 100 µs into the all-reduce, a thread blocks in cudaStreamSynchronize until it ends
    # (+5 µs wake-up): the main thread with Kineto's "Stream Sync" marker on the NCCL stream,
    # or, without a marker, the thread that launched the collective
    step = next(e for e in complete(doc) if e["name"].startswith("ProfilerStep"))
    t_in, wait = k["ts"] + 100.0, k["dur"] - 100.0
    insert_call(doc, pid=call["pid"], tid=step["tid"] if marker else call["tid"], ts=t_in, dur=wait + 5.0,
                name="cudaStreamSynchronize", args={"correlation": 99999})
    if marker:
        doc["traceEvents"].append({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": k["pid"],
                                   "tid": k["tid"], "ts": t_in + wait, "dur": 5.0,
                                   "args": {"correlation": 99999, "stream": k["args"]["stream"], "device": 0}})
    ctx = _ctx(doc, tmp_path)
    g = build_graph(ctx)
    row = int(np.flatnonzero((ctx.trace.correlation == 99999) & (ctx.trace.kind == Kind.RUNTIME))[0])
    end = g.row_end[row]
    w, _ = edited_weights(ctx, g, [Edit("remove", "exposed_comm")])
    # the all-reduce takes 0: the sync returns 5 µs after it began (its wake-up, from the call's
    # own start), so it loses exactly the 1,589.6 µs it waited
    assert g.t_us[end] - retime(g, w)[end] == pytest.approx(wait, abs=1e-3)
    p = project(ctx, g, [Edit("remove", "exposed_comm")])
    assert p["violations"] == [] and p["gain_pct"] <= p["bound_pct"]


def test_remove_launch_never_beats_the_kernel_time_of_a_busy_gpu(tmp_path):
    # plant issue #28's compiled H100 case: a step whose GPU is 98% busy and whose kernels the
    # trace cannot tie to their launches (no correlation ids, no flow events). Before #28 the
    # steps then ended with their CPU ranges, and removing launch overhead projected 89.8 →
    # 24.8 ms, below the 88.7 ms the stream runs per step.
    doc = load(RESNET)
    for e in doc["traceEvents"]:
        if e.get("cat") in GPU_CATS:
            (e.get("args") or {}).pop("correlation", None)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") not in ("s", "t", "f")]
    ctx = _ctx(doc, tmp_path)
    p = project(ctx, build_graph(ctx), [Edit("remove", "launch_overhead")])
    assert p["violations"] == [] and p["projected_step_us"] >= p["floor_us"] > 0.95 * p["measured_step_us"]
    assert p["gain_pct"] <= p["bound_pct"] < 5.0


def test_a_main_thread_wait_is_the_releasing_thread_s_time(tmp_path):
    # rank 34 of a gloo job: the main thread records nothing for 1.07 s while two worker threads
    # run gloo:all_reduce; it goes on 12 ms after the last one ends. The path is the workers'
    # all-reduces, not "(host, untraced)". Plant: the last all-reduce takes 50 ms longer.
    doc = load(GLOO)
    last = max((e for e in complete(doc) if e["name"] == "gloo:all_reduce"), key=lambda e: e["ts"] + e["dur"])
    before = critical_path(_ctx(load(GLOO), tmp_path, "a.json"))["trace"]
    insert_call(doc, pid=last["pid"], tid=last["tid"], ts=last["ts"] + last["dur"] - 1.0, dur=50_000.0,
                name="gloo:wait", cat="user_annotation")
    after = critical_path(_ctx(doc, tmp_path))["trace"]

    def us(block, name):
        return sum(o["us"] for o in block["top_ops"] if o["name"] == name)

    # 1,283 ms of path: 890 ms in all-reduces on the workers, 11 µs untraced on the main thread
    assert us(before, "(host, untraced)") < 1_000.0 and us(before, "gloo:all_reduce") > 850_000.0
    assert after["length_us"] - before["length_us"] == pytest.approx(50_000.0)
    assert us(after, "gloo:wait") == pytest.approx(50_000.0)  # on the path, on the worker thread


def test_a_worker_thread_s_event_sync_carries_the_main_thread_to_the_gpu(tmp_path):
    # main thread (tid 1): launches a kernel at 10 (it runs 15→910) and records an event; it then records
    # nothing (a future's result()) until 1000; a worker (tid 2) calls cudaEventSynchronize on
    # that event at 100, which returns at 915 (the kernel ends at 910), and works until 990.
    ctx = context(tmp_path, [
        ev("ProfilerStep#1", "user_annotation", 0, 1100),
        launch(10, 5, 1), kernel("ampere_sgemm_128x64_nn", 15, 895, 1),
        ev("cudaEventRecord", "cuda_runtime", 20, 2, correlation=2),
        ev("cudaEventSynchronize", "cuda_runtime", 100, 815, tid=2, correlation=3),
        ev("aten::add", "cpu_op", 920, 70, tid=2),
        ev("aten::mul", "cpu_op", 1000, 50),
    ])
    # the whole trace's path (the step is the kernel's span, 15→910: issue #39 item 2):
    # launch → kernel (895) → the worker's sync wake-up (5) → its add (70) → the main
    # thread's mul; not 800 µs of main-thread "(host, untraced)"
    whole = critical_path(ctx)["trace"]
    names = [o["name"] for o in whole["top_ops"]]
    assert "(host, untraced)" not in names and "ampere_sgemm_128x64_nn" in names and "aten::add" in names
    assert whole["share_us"]["kernel:gemm"] == 895
