"""analysis/graph/_loops.c gives what chains.py's Python loops give, bit for bit: re-timed node times
under several weight sets and the binding-edge walks, on real traces' graphs. Like the trace
scanner, the extension must have been built where a C compiler is present."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trainprof.analysis.graph import chains
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.graph.depgraph import E_SYNC, binding_edges, build_graph
from trainprof.trace import read_trace
from tests.extensions import require_built

REAL = Path(__file__).resolve().parents[2] / "data" / "traces" / "real"
TRACES = ["hta_ddp_2rank_nccl_a100/nccl_data.json.gz", "hta_resnet_v100_ns_timeunit/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
          "tracelens_mi300_resnet_ddp_8rank_rank0/resnet_act_checkpoint.json.gz",
          "hta_small_edge_cases/cuda_event_sync/event_sync_trace.json.gz"]
LOOPS = require_built(chains._loops, "trainprof.analysis.graph._loops")


@pytest.fixture(scope="module", params=TRACES, ids=lambda p: p.split("/")[0])
def graph(request):
    return build_graph(Context.build(read_trace(REAL / request.param)))


def both(monkeypatch, fn, *args):
    fast = fn(*args)
    with monkeypatch.context() as m:
        m.setattr(chains, "_loops", None)
        pure = fn(*args)
    return fast, pure


def weight_sets(g):
    rng = np.random.default_rng(0)
    w = g.w_us + g.slack_us
    halved = w * np.where(rng.random(len(w)) < 0.3, 0.5, 1.0)
    no_sync = np.where(g.etype == E_SYNC, -np.inf, w)  # removed edges: the junction keeps its time
    return {"recorded": w, "random halves": halved, "sync edges removed": no_sync}


def test_retime_identical(graph, monkeypatch):
    for label, w in weight_sets(graph).items():
        fast, pure = both(monkeypatch, chains.retime, graph, w)
        assert fast.tobytes() == pure.tobytes(), label


def test_walks_identical(graph, monkeypatch):
    t = graph.t_us
    w = graph.w_us + graph.slack_us
    binding = binding_edges(t, graph.src, graph.dst, w, graph.n_nodes)
    lists = chains.walk_lists(graph, t, binding)
    ends = np.argsort(t)[-3:].tolist() + [int(np.argmax(t)), 0]
    for end in ends:
        for t_start in (float(t.min()) - 1.0, float(np.median(t)), float(t[end])):
            (fe, fh), (pe, ph) = both(monkeypatch, chains.path_edges, graph, t, binding, end, t_start, lists)
            assert fh == ph and fe.dtype == pe.dtype and fe.tolist() == pe.tolist(), (end, t_start)


def test_inconsistent_arrays_are_refused():
    i64, f64 = np.zeros(2, np.int64), np.zeros(2)
    with pytest.raises(ValueError, match="inconsistent"):
        LOOPS.retime_junctions(np.array([3, 0]), i64, f64, f64.copy())  # 3 in-edges, 2 given
    with pytest.raises(ValueError, match="inconsistent"):
        LOOPS.retime_junctions(np.array([1, 1]), np.array([0, 7]), f64, f64.copy())  # source out of range
    with pytest.raises(TypeError, match="format"):
        LOOPS.retime_junctions(i64.astype(np.int32), i64, f64, f64.copy())
    with pytest.raises(ValueError, match="inconsistent"):
        LOOPS.hop_back(np.array([0, 5]), i64, f64, 1, -1.0)  # an edge id beyond the edges
    with pytest.raises(ValueError, match="inconsistent"):  # a cycle (node 0 bound by an edge from itself)
        LOOPS.hop_back(np.array([0]), np.array([0]), np.array([1.0]), 0, 0.0)
    edges, head = LOOPS.hop_back(np.array([-1, 0]), np.array([0]), np.array([0.0, 1.0]), 1, -1.0)
    assert np.frombuffer(edges, np.int64).tolist() == [0] and head == 0  # node 1 <- edge 0 <- node 0 (no in-edge)
