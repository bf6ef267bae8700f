"""Runs of one-in-edge nodes (analysis/graph/chains.py): the same times and paths as the plain
recurrence, on a hand-written trace (worked on paper) and on shipped real traces."""

from pathlib import Path

import numpy as np
import pytest

from trainprof.analysis.graph import chains
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.graph.critical_path import step_bounds, windows
from trainprof.analysis.graph.depgraph import binding_edges, build_graph
from trainprof.analysis.graph.whatif import REMOVABLE, Edit, edited_weights
from trainprof.trace import read_trace

from test_critical_path import ADD, GEMM, context, ev, kernel, launch

REAL = Path(__file__).parents[2] / "data" / "traces" / "real"


def loop_walk(g, t_us, binding, end, t_start):
    """The walk as the plain loop it replaces: one binding edge at a time."""
    bind, src, t = binding.tolist(), g.src.tolist(), t_us.tolist()
    edges, v, head = [], end, -1
    while v >= 0 and t[v] > t_start:
        e = bind[v]
        if e < 0:
            head = v
            break
        edges.append(e)
        v = src[e]
    return np.array(edges[::-1], dtype=np.int64), head


def same_as_loop(ctx: Context) -> None:
    g = build_graph(ctx)
    t0 = float(g.t_us.min())
    for edits in [[Edit("remove", n)] for n in REMOVABLE] + [[Edit("scale", "gemm", 0.5)]]:
        w, _ = edited_weights(ctx, g, edits)
        # compared from the first node: at epoch-scale µs adding t0 back rounds to 0.25 µs
        fast_rel = chains._retime(g, w, g.t_us - t0)
        plain_rel = chains._retime_loop(g, w, g.t_us - t0)
        assert np.allclose(fast_rel, plain_rel, rtol=0, atol=1e-6)
        fast = chains.retime(g, w)
        assert np.array_equal(fast, fast_rel + t0)
        bind = binding_edges(fast, g.src, g.dst, w, g.n_nodes)
        lists = chains.walk_lists(g, fast, bind)
        for _, lo, end in windows(fast, step_bounds(ctx, g)):
            e1, h1 = loop_walk(g, fast, bind, end, float(fast[lo]))
            for min_slice in (1, chains.MIN_SLICE):  # every run sliced; short runs hopped
                e2, h2 = _path_edges(g, fast, bind, end, float(fast[lo]), lists, min_slice)
                assert h1 == h2 and np.array_equal(e1, e2)


def _path_edges(g, t, bind, end, t_start, lists, min_slice):
    kept = chains.MIN_SLICE
    chains.MIN_SLICE = min_slice
    try:
        return chains.path_edges(g, t, bind, end, t_start, lists)
    finally:
        chains.MIN_SLICE = kept


def test_runs_and_junctions_of_a_small_trace(tmp_path):
    ctx = context(tmp_path, [
        ev("ProfilerStep#1", "user_annotation", 0, 400),
        ev("aten::mm", "cpu_op", 10, 50), launch(20, 10, 1), kernel(GEMM, 40, 100, 1),
        launch(100, 10, 2), kernel(ADD, 150, 50, 2),
    ])
    g = build_graph(ctx)
    ch = chains.chains_of(g)
    # The main thread's boundaries 0,10,20,30,60,100,110,400 form one run from the step's
    # start (a source: no in-edge); each kernel's start has two in-edges (launch + stream or
    # the start of the trace's stream) or one (the first kernel: its launch only).
    indeg = np.bincount(g.dst, minlength=g.n_nodes)
    assert (indeg[ch.edge >= 0] == 1).all()  # a run node has one in-edge...
    assert set(ch.junctions) == set(np.flatnonzero(ch.edge < 0).tolist())  # ...the rest are junctions
    assert (ch.edge >= 0).sum() > len(ch.junctions)  # and most nodes are in runs
    # every node's run hangs from a junction that precedes it
    assert (ch.edge[ch.root] < 0).all() and (g.t_us[ch.root] <= g.t_us).all()
    # with nothing edited the recurrence gives back the recorded times
    assert np.allclose(chains.retime(g, g.w_us + g.slack_us), g.t_us, rtol=0, atol=1e-9)
    # the add kernel 2× faster: its start stays at 150 (the gemm's end at 140 + 10 µs of
    # slack kept on the stream edge), its end moves from 200 to 150 + 50/2 = 175
    w, _ = edited_weights(ctx, g, [Edit("scale", "elementwise", 0.5)])
    t = chains.retime(g, w)
    add = int(np.flatnonzero(np.array(ctx.trace.names)[ctx.trace.name_id] == ADD)[0])
    assert t[g.row_start[add]] == pytest.approx(150) and t[g.row_end[add]] == pytest.approx(175)
    same_as_loop(ctx)


@pytest.mark.parametrize("trace", [
    "hta_resnet_v100_ns_timeunit",  # epoch-scale ns timestamps: float64 steps of 0.25 µs
    "tracelens_h100_hf_inference",
    "hta_recsys_128rank_nccl_a100",
])
def test_same_times_and_paths_as_the_plain_loop_on_real_traces(trace):
    path = sorted(p for p in (REAL / trace).iterdir() if ".json" in p.name)[0]
    same_as_loop(Context.build(read_trace(str(path))))
