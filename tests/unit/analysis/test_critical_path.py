"""Critical path on hand-written traces; every answer worked out on paper above its assert.

Times are µs. "L" is the launch latency the graph learns: the median delay between a launch
call's start and its kernel's start, over kernels that found their stream idle.
"""

import json

import numpy as np
import pytest

from trainprof.analysis.timeline.context import Context
from trainprof.analysis.graph import critical_path as cp_module
from trainprof.analysis.graph.depgraph import E_LAUNCH, E_SYNC, E_WAIT, build_graph
from trainprof.trace import read_trace

from tests.plain import plain

GEMM = "ampere_sgemm_128x64_nn"
ADD = "void at::native::vectorized_elementwise_kernel<4>"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def critical_path(ctx, *a, **kw):
    """The rank's critical_path block as analysis.json holds it."""
    return plain(cp_module.critical_path(ctx, *a, **kw))


def ev(name, cat, ts, dur, tid=1, **args):
    pid = 0 if cat in ("kernel", "gpu_memcpy", "cuda_sync") else 100
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "args": args}


def launch(ts, dur, corr, name="cudaLaunchKernel"):
    return ev(name, "cuda_runtime", ts, dur, correlation=corr)


def kernel(name, ts, dur, corr, stream=7):
    return ev(name, "kernel", ts, dur, tid=stream, correlation=corr, stream=stream, device=0)


def context(tmp_path, events) -> Context:
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": events}))
    return Context.build(read_trace(str(p)))


@pytest.fixture
def sync_trace(tmp_path):
    return context(tmp_path, [
        ev("ProfilerStep#1", "user_annotation", 0, 1000),
        ev("aten::mm", "cpu_op", 10, 50), launch(20, 10, 1), kernel(GEMM, 40, 500, 1),
        ev("aten::add", "cpu_op", 60, 40), launch(70, 10, 2), kernel(ADD, 540, 100, 2),
        launch(100, 10, 3), kernel(ADD, 120, 100, 3, stream=8),
        ev("aten::item", "cpu_op", 200, 500),
        ev("cudaStreamSynchronize", "cuda_runtime", 210, 440, correlation=4),
        ev("Stream Sync", "cuda_sync", 640, 10, tid=7, correlation=4, stream=7, device=0),
        ev("aten::copy_", "cpu_op", 700, 200),
    ])


def whole_path(ctx, cap=1000):
    """The whole trace's path with its segments: from the last node back to the first. On
    these one-step traces it is the step as its ProfilerStep range spans it (the step itself
    is the span of its GPU work: issue #39 item 2)."""
    g = build_graph(ctx)
    p = cp_module.walk(g, g.t_us, g.w_us, g.binding, int(g.t_us.argmax()), float(g.t_us.min()))
    return plain(cp_module.summarise(ctx, g, p, 10, max_segments=cap))


def test_launch_stream_and_sync_edges(sync_trace):
    g = build_graph(sync_trace)
    # L = 40 − 20 = 20: the gemm is the one launch that found the device idle; the stream-8
    # add (launched at 100 while the gemm ran) and the stream-7 add (queued behind the gemm)
    # waited for the work ahead, so they do not count.
    assert g.launch_latency_us == 20
    assert g.counts["launch_edges"] == 3 and g.counts["streams"] == 2
    # The stream sync names stream 7 (its cuda_sync marker): one edge, from the add's end.
    assert g.counts["sync_edges"] == 1
    e = int((g.etype == E_SYNC).nonzero()[0][0])
    assert g.t_us[g.src[e]] == 640 and g.t_us[g.dst[e]] == 650 and g.w_us[e] == 10


def test_path_crosses_to_the_gpu_at_the_sync(sync_trace):
    cp = critical_path(sync_trace)
    (gpu_step,) = cp["steps"]
    # the step: its GPU span, gemm 40→540 and add 540→640 on stream 7
    assert (gpu_step["start_us"], gpu_step["length_us"]) == (40, 600)
    assert gpu_step["share_us"] == {"kernel:gemm": 500, "kernel:elementwise": 100}
    step = whole_path(sync_trace)
    # 1000 = step self 10 + aten::mm self 10 + launch latency 20 + gemm 500 + add 100
    #        + sync wake-up 10 + aten::item self 50 + aten::copy_ 200 + step self 100
    assert step["length_us"] == 1000
    assert step["share_us"] == {"kernel:gemm": 500, "cpu_op": 370, "kernel:elementwise": 100,
                                "launch_overhead": 20, "sync_wait": 10}
    kinds = [(s["kind"], s["dur_us"]) for s in step["segments"]]
    assert kinds == [("cpu_op", 10), ("cpu_op", 10), ("launch_overhead", 20), ("kernel", 500), ("kernel", 100),
                     ("sync_wait", 10), ("cpu_op", 50), ("cpu_op", 200), ("cpu_op", 100)]
    assert step["segments"][3]["class"] == "gemm" and step["segments"][3]["start_us"] == 40
    # the stream-8 kernel overlapped the gemm: not on the path
    assert step["top_ops"][0] == {"kind": "kernel:gemm", "name": GEMM, "us": 500, "count": 1, "share_pct": 50.0}


def test_cuda_graph_launch_puts_every_graph_kernel_on_the_path(tmp_path):
    ctx = context(tmp_path, [
        ev("ProfilerStep#1", "user_annotation", 0, 400),
        launch(10, 20, 5, name="cudaGraphLaunch"),
        kernel(GEMM, 50, 100, 5), kernel(ADD, 150, 100, 5), kernel(GEMM, 250, 100, 5),
        ev("cudaDeviceSynchronize", "cuda_runtime", 60, 300, correlation=6),
    ])
    g = build_graph(ctx)
    assert g.counts["graph_launch_kernels"] == 3 and g.counts["launch_edges"] == 3
    (gpu_step,) = critical_path(ctx)["steps"]
    assert gpu_step["length_us"] == 300  # the three kernels' span
    step = whole_path(ctx)
    # 400 = step self 10 + latency 40 (50-10) + 3 × 100 kernels + wake-up 10 (360-350) + step self 40
    assert step["length_us"] == 400
    assert step["share_us"]["kernel:gemm"] == 200 and step["share_us"]["kernel:elementwise"] == 100
    assert step["share_us"]["launch_overhead"] == 40 and step["share_us"]["sync_wait"] == 10
    assert [s["kind"] for s in step["segments"]].count("kernel") == 3


def collective_events():
    """Compute stream 7 and a comm stream 20 ordered by event waits, as DDP does."""
    return [
        ev("ProfilerStep#1", "user_annotation", 0, 720),
        launch(20, 10, 1), kernel(GEMM, 100, 200, 1),
        ev("cudaEventRecord", "cuda_runtime", 35, 1, correlation=2),
        ev("cudaStreamWaitEvent", "cuda_runtime", 40, 1, correlation=3),
        launch(45, 5, 4), kernel(NCCL, 300, 300, 4, stream=20),
        ev("cudaEventRecord", "cuda_runtime", 52, 1, correlation=5),
        ev("cudaStreamWaitEvent", "cuda_runtime", 54, 1, correlation=6),
        launch(56, 4, 7), kernel(ADD, 600, 100, 7),
        ev("cudaDeviceSynchronize", "cuda_runtime", 70, 640, correlation=8),
    ]


def test_collective_and_cross_stream_waits(tmp_path):
    ctx = context(tmp_path, collective_events())
    g = build_graph(ctx)
    # waits: nccl after the gemm (recorded at 35), add after the nccl (recorded at 52)
    assert g.counts["wait_edges"] == 2
    waits = sorted((g.t_us[g.src[e]], g.t_us[g.dst[e]]) for e in (g.etype == E_WAIT).nonzero()[0])
    assert waits == [(300, 300), (600, 600)]
    # L = 100 − 20 = 80, from the gemm, the one launch that found the device idle: the
    # all-reduce's 255 µs (45 → 300) was queueing behind the gemm on a busy device (its own
    # stream was idle: counted as latency before issue #39, L = median(80, 255) = 167.5), and
    # the add queued behind the all-reduce
    assert g.launch_latency_us == 80
    assert (g.etype == E_LAUNCH).sum() == 3
    (gpu_step,) = critical_path(ctx)["steps"]
    assert gpu_step["share_us"] == {"communication": 300, "kernel:gemm": 200, "kernel:elementwise": 100}
    step = whole_path(ctx)
    # 720 = step self 20 + latency 80 + gemm 200 + all-reduce 300 + add 100 + wake-up 10 + step self 10
    assert step["length_us"] == 720
    assert step["share_us"] == {"communication": 300, "kernel:gemm": 200, "kernel:elementwise": 100,
                                "launch_overhead": 80, "cpu_op": 30, "sync_wait": 10}
    assert step["share_pct"]["communication"] == pytest.approx(100 * 300 / 720, abs=1e-3)


def test_data_loading_on_a_cpu_trace(tmp_path):
    events = []
    for i, t0 in enumerate((0, 100)):
        events += [ev(f"ProfilerStep#{i + 1}", "user_annotation", t0, 100),
                   ev("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", t0, 30),
                   ev("aten::mm", "cpu_op", t0 + 30, 60)]
    cp = critical_path(context(tmp_path, events))
    assert [s["step"] for s in cp["steps"]] == [1, 2]
    # each step: DataLoader 30 + aten::mm 60 + step self 10
    for s in cp["steps"]:
        assert s["length_us"] == 100
        assert s["share_us"] == {"cpu_op": 70, "data_loading": 30}
    assert cp["trace"]["length_us"] == 200


def test_real_traces_paths_add_up():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "data" / "traces" / "real"
    for f in ("hta_small_edge_cases/benchmark_result_2869224_1695835535_trace.json.gz",
              "hta_ddp_2rank_nccl_a100/nccl_data.json.gz",
              "hta_small_edge_cases/cuda_event_sync_multi_stream/event_sync_trace.json.gz"):
        ctx = Context.build(read_trace(str(root / f)))
        cp = critical_path(ctx)
        for s in cp["steps"]:
            assert sum(s["share_us"].values()) == pytest.approx(s["length_us"], rel=1e-6)
            assert sum(x["dur_us"] for x in s["segments"]) == pytest.approx(s["length_us"], rel=1e-6)
            assert len(s["segments"]) <= 1000
        assert cp["graph"]["nodes"] > 0


def test_segments_past_the_cap_keep_the_longest(sync_trace):
    from trainprof.analysis.graph.critical_path import summarise, walk

    g = build_graph(sync_trace)
    s = summarise(sync_trace, g, walk(g, g.t_us, g.w_us, g.binding, int(g.t_us.argmax()), 0.0), 5, max_segments=5)
    # 9 runs, cap 5: the (5−1)/2 = 2 longest (gemm 500, aten::copy_ 200) stay; between them
    # [step 10, mm 10, launch 20] and [add 100, sync 10, item 50] merge; the last run
    # (step self 100) is alone and stays.
    s = plain(s)
    got = [(x["kind"], x["name"], x["dur_us"]) for x in s["segments"]]
    assert got == [("cpu_op", "(3 segments)", 40), ("kernel", GEMM, 500), ("kernel", "(3 segments)", 160),
                   ("cpu_op", "aten::copy_", 200), ("cpu_op", "ProfilerStep#1", 100)]
    assert s["segments_merged"] == 4 and s["share_us"]["kernel:gemm"] == 500  # shares are not capped


def test_segment_caps_split_the_budget_over_the_first_steps():
    from trainprof.analysis.graph.critical_path import DETAIL_STEPS, segment_caps

    assert DETAIL_STEPS == 8
    assert segment_caps(5, 2000) == [400] * 5  # 2000 // 5
    assert segment_caps(10, 2000) == [250] * 8 + [0, 0]  # 2000 // 8, none after the 8th
    assert segment_caps(1, 2000) == [1000]  # one step never above MAX_SEGMENTS
    assert segment_caps(0, 2000) == []


def test_a_job_splits_its_segment_budget_over_its_ranks():
    from trainprof.analysis.graph.critical_path import job_segment_budget

    assert job_segment_budget(1) == 2000 and job_segment_budget(32) == 2000  # 64000 // 32 = 2000
    assert job_segment_budget(64) == 1000  # 64000 // 64
    assert job_segment_budget(1000) == 400  # 64 would be below the floor of 400


def test_pieces_inside_an_interval_on_node_ids():
    """depgraph.inside_nodes: the piece after node q lies in [start, end) of some interval.
    Worked by hand: [2, 5) holds the pieces after 2, 3, 4; [10, 12) after 10, 11; [3, 4)
    nested in [2, 5) changes nothing; the piece after 5 or 12 is outside (an end closes)."""
    from trainprof.analysis.graph.depgraph import inside_nodes

    start, end = np.array([10, 2, 3]), np.array([12, 5, 4])
    q = np.array([1, 2, 3, 4, 5, 9, 10, 11, 12])
    assert inside_nodes(start, end, q).tolist() == [False, True, True, True, False, False, True, True, False]
    assert inside_nodes(start[:0], end[:0], q).tolist() == [False] * len(q)


def test_absurd_times_raise_no_numpy_warning():
    """A fuzzed trace with times near 1e308: binding_edges rounds arrivals to 1e-6 (× 1e6
    overflows to inf). That must not print numpy's RuntimeWarning on the user's stderr, and
    the junction still takes its latest in-edge (ties: the later source)."""
    import warnings

    from trainprof.analysis.graph.depgraph import binding_edges

    t = np.array([1e307, 1.5e307, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        bound = binding_edges(t, np.array([0, 1]), np.array([2, 2]), np.array([1.0, 1.0]), 3)
    assert bound.tolist() == [-1, -1, 1]
