"""Which GPU work belongs to which step, and each step's window on the dependency graph.

A step runs from its ProfilerStep's start to the later of that range's end and the end of
the GPU work launched inside it (trace/steps.py: by the launch call's time). GPU work the
trace cannot tie to a launch inside a step (no correlation link, or launched between two
ProfilerStep ranges) still ran, and a step cannot end before its stream finished it: such
work joins the step whose GPU window (end of the previous step, end of this one] holds its
start, so a what-if that makes the host faster cannot end a step before the GPU work it
overlapped (before issue #28 it was left out, and a step's projected end could be its CPU
range's alone: the busiest stream's kernels ran past it).
"""

from __future__ import annotations

import weakref

import numpy as np

from trainprof.analysis.timeline.context import Context
from trainprof.analysis.graph.depgraph import Graph
from trainprof.trace.steps import Steps


_OWNED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def step_work(ctx: Context) -> list[np.ndarray]:
    """Per step (ctx.steps order), the GPU work rows it owns, in row order. The pseudo-step
    owns every row. Computed once per context (every what-if scenario asks: 4 ms each on
    the 216k-event DDP trace)."""
    out = _OWNED.get(ctx)
    if out is None:
        out = _OWNED[ctx] = _step_work(ctx)
    return out


def _step_work(ctx: Context) -> list[np.ndarray]:
    t = ctx.trace
    s = ctx.steps
    work = ctx.work
    if s.pseudo or not len(s):
        return [work] if len(s) else []
    from trainprof.trace.steps import step_of

    owner = step_of(t, ctx.links, s)[work]
    # measured GPU end of each step from its own work (its CPU range's end when it has none)
    end = np.array(s.cpu_end_us, dtype=float)
    if len(work):
        np.maximum.at(end, owner[owner >= 0], t.end_us[work[owner >= 0]])
    end = np.maximum.accumulate(end)  # windows are (end_{i-1}, end_i]: never going back
    free = np.flatnonzero(owner < 0)
    if len(free):
        i = np.searchsorted(end, t.ts_us[work[free]], side="left")
        inside = (i < len(s)) & (t.ts_us[work[free]] >= s.cpu_start_us[0])
        owner = owner.copy()
        owner[free[inside]] = i[inside]
    # work rows grouped by step once (a stable sort keeps each group ascending), not one scan
    # of all work per step: O(steps × work) was 0.9 s of a 4.5M-event trace's what-ifs
    by_step = np.argsort(owner, kind="stable")
    cut = np.searchsorted(owner[by_step], np.arange(len(s) + 1), side="left")
    return [work[by_step[cut[i]:cut[i + 1]]] for i in range(len(s))]


def step_bounds(ctx: Context, g: Graph, owned: list[np.ndarray] | None = None) -> list[tuple[int, int, np.ndarray]]:
    """(step number, start node, candidate end nodes) per step: the end is the latest of its
    CPU interval's end (its ProfilerStep range, or its iteration annotation's: _bound_nodes)
    and the ends of the GPU work it owns (step_work). The pseudo-step (no steps) spans the
    whole graph."""
    s = ctx.steps
    if s.pseudo or not len(s):
        if not g.n_nodes:
            return []
        # every lane's last node: under a what-if any of them may finish last
        order = np.lexsort((g.t_us, g.lane))
        last = order[np.r_[g.lane[order][1:] != g.lane[order][:-1], True]]
        return [(-1, int(np.argmin(g.t_us)), last.astype(np.int64))]
    owned = step_work(ctx) if owned is None else owned
    first, last = _bound_nodes(g, s)
    out = []
    for i in range(len(s)):
        ends = np.concatenate([[last[i]], g.row_end[owned[i]]]).astype(np.int64)
        out.append((int(s.number[i]), int(first[i]), ends[ends >= 0]))
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


def windows(t_us: np.ndarray, bounds) -> list[tuple[int, int, int]]:
    """(step, from node, end node) under node times t_us. Step i owns (end of step i−1,
    end of step i] — HTA's and temporal.py's partition, so step times are periods that add
    up to the run (a CPU running ahead of the GPU does not stretch them); the first step
    starts at its ProfilerStep's start."""
    out = []
    prev = -1
    for number, start, ends in bounds:
        end = int(ends[np.argmax(t_us[ends])])
        lo = prev if prev >= 0 and t_us[start] < t_us[prev] < t_us[end] else start
        out.append((number, lo, end))
        prev = end
    return out
