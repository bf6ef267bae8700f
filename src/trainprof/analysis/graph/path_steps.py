"""Each step's window on the dependency graph: analysis/timeline/step_windows.py's definition
(one for every figure), on graph nodes so that a what-if re-times the same windows.

A step that owns GPU work (step_windows.step_work: launched inside its CPU range, or untied
and starting in its window) ends at the end of the latest of that work and starts where the
previous step ended; the first starts at its first activity, so the CPU's run-ahead into the
first step is in no window (before issue #39 the first step started at its ProfilerStep's
start: 121.6 ms for a 59.5 ms GPU step). A step that owns none (a CPU-only trace, a GPU
trace's profiler stop) is its CPU range: its ProfilerStep's (or covering annotation's) nodes.
Untied work still belongs to a step (before issue #28 a step whose kernels were untied ended
with its CPU range, and a what-if that made the host faster could end it before its stream
finished).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from trainprof.analysis.timeline.context import Context
from trainprof.analysis.timeline.step_windows import partition, step_work  # noqa: F401 (step_work re-exported)
from trainprof.analysis.graph.depgraph import Graph
from trainprof.trace.steps import Steps


class StepBound(NamedTuple):
    """One step's candidate nodes: its window starts at the earliest of `starts` (the first
    step; later ones start at the previous window's end) and ends at the latest of `ends`."""

    number: int
    starts: np.ndarray
    ends: np.ndarray
    cpu_start: int  # the node of its CPU range's start (where its host work begins)
    gpu: bool  # the window is the span of the step's GPU work


def step_bounds(ctx: Context, g: Graph, owned: list[np.ndarray] | None = None) -> list[StepBound]:
    """Per step its candidate start and end nodes (StepBound). The pseudo-step (no steps)
    spans the whole graph."""
    s = ctx.steps
    if s.pseudo or not len(s):
        if not g.n_nodes:
            return []
        # every lane's last node: under a what-if any of them may finish last
        order = np.lexsort((g.t_us, g.lane))
        last = order[np.r_[g.lane[order][1:] != g.lane[order][:-1], True]]
        first = int(np.argmin(g.t_us))
        return [StepBound(-1, np.array([first]), last.astype(np.int64), first, False)]
    owned = step_work(ctx) if owned is None else owned
    first, last = _bound_nodes(g, s)
    out = []
    for i in range(len(s)):
        starts, ends = g.row_start[owned[i]], g.row_end[owned[i]]
        gpu = bool(ctx.has_gpu and (ends >= 0).any())
        if not gpu:
            starts, ends = np.array([first[i]]), np.array([last[i]])
        out.append(StepBound(int(s.number[i]), starts[starts >= 0].astype(np.int64), ends[ends >= 0].astype(np.int64),
                             int(first[i]), gpu))
    return out


def _bound_nodes(g: Graph, s: Steps) -> tuple[np.ndarray, np.ndarray]:
    """Start and end node of each step's CPU interval: its ProfilerStep's (or covering
    annotation's) own nodes; for steps cut between annotations (trace/iterations.py) the
    nodes of the annotation's thread at the interval's bounds (each bound is an event's
    start or end there, so a node sits exactly at it)."""
    rows = s.row.astype(np.int64)
    first, last = g.row_start[rows].copy(), g.row_end[rows].copy()
    if s.anchor in ("opens", "closes") and len(rows):
        lane = g.lane[g.row_start[rows[0]]]
        nodes = np.flatnonzero(g.lane == lane)  # one block, in time order (depgraph.build_graph)
        t = g.t_us[nodes]
        first = nodes[np.minimum(np.searchsorted(t, s.cpu_start_us, side="left"), len(nodes) - 1)]
        last = nodes[np.maximum(np.searchsorted(t, s.cpu_end_us, side="right") - 1, 0)]
    return first, last


def windows(t_us: np.ndarray, bounds: list[StepBound]) -> list[tuple[int, int, int]]:
    """(step, from node, end node) under node times t_us: step_windows.partition on each
    step's earliest start and latest end node."""
    if not bounds:
        return []
    start = np.array([int(b.starts[np.argmin(t_us[b.starts])]) for b in bounds], dtype=np.int64)
    end = np.array([int(b.ends[np.argmax(t_us[b.ends])]) for b in bounds], dtype=np.int64)
    lo_of, end_of = partition(t_us[start], t_us[end], np.array([b.gpu for b in bounds], dtype=bool))
    end_node = end[end_of]
    lo_node = np.where(lo_of < 0, start, end_node[np.maximum(lo_of, 0)])
    return [(b.number, int(lo), int(e)) for b, lo, e in zip(bounds, lo_node, end_node)]
