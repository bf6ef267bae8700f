"""The critical path: the chain of waits that set each step's time (and the whole trace's).

Walk back from the step's last node along binding edges (depgraph.py): each node's time was
set by exactly one in-edge, so the walk ends at the step's start and the pieces add up to
the step's span exactly (length_us = end − start). Each edge gives up to two segments: its
intrinsic part (a CPU op's self time, a kernel, a launch latency, a sync's wake-up) and its
slack (GPU queueing gaps and waits the trace cannot explain: `idle`).

A step runs from its ProfilerStep's start to the later of that range's end and the end of
the GPU work it owns (path_steps.py), so a step owns its GPU tail.

Share per kind is of the path length; kernels are split by class (`kernel:gemm`, ...).
Segments (kind, name, start_us, dur_us; `class` for kernels) are kept for the first
DETAIL_STEPS steps only, within a budget per rank record (SEGMENT_BUDGET, split evenly over
those steps, at most MAX_SEGMENTS each): adjacent pieces with the same kind and name merge
first; past a step's cap, the longest (cap−1)/2 stay and the runs between them merge (the
shares and top ops are computed before capping, for every step). A multi-rank job splits a
job-wide budget over its ranks (job_segment_budget): the per-step detail was ~7.9 MB per
rank of a 64-rank job, the driver's memory at 1,000 ranks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from msgspec import UNSET

from trainprof.analysis.graph.chains import path_edges, walk_lists
from trainprof.analysis.graph.queueing import cut, occupancy
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.graph.path_steps import step_bounds, windows  # noqa: F401 (re-exported: tests, whatif)
from trainprof.analysis.graph.depgraph import (ALLOC, E_CPU, E_GPU, E_JOIN, E_LAUNCH, E_STREAM, E_SYNC, E_WAIT, E_WAKE,
                                         IDLE, KERNEL, LAUNCH, SEG_KINDS, Graph, build_graph)
from trainprof.analysis.graph.clock import Offset as ClockOffset
from trainprof.recordtypes.graph import CriticalPath, GraphCounts, PathOp, PathSegment, PathStep, PathSummary

MAX_SEGMENTS = 1000  # per step in analysis.json; a 20k-kernel step would otherwise be ~2 MB
SEGMENT_BUDGET = 2000  # per rank record: ~200 KB of JSON (measured ~100 bytes per segment)
DETAIL_STEPS = 8  # steps with segments: the report's chart draws at most 8 lanes
JOB_SEGMENTS = 64_000  # a job's budget, split over its ranks (≥ MIN_RANK_BUDGET each)
MIN_RANK_BUDGET = 400  # 50 per step over 8 steps: the shape of a step stays visible
NAME_CHARS = 160  # templated kernel names run to 1,000+ characters
ET = 16  # name keys: (name id + 1) * ET + edge type (E_*: 0-7), or + QUEUED
QUEUED = 8  # a wait or launch while the device ran this activity (queueing.py)
INVARIANT_TOL_US = 1e-3  # float error of sums at epoch-scale µs
SLACK_NAMES = {E_STREAM: "(GPU queue gap)", E_WAIT: "(cross-stream wait)", E_WAKE: "(thread waits for main)",
               E_JOIN: "(main thread resumes after the releasing thread)",
               E_LAUNCH: "(kernel start delay)", E_SYNC: "(sync wait)", E_GPU: "(wait)", E_CPU: "(wait)"}


@dataclass(frozen=True)
class Pieces:
    """The pieces of one path in time order (arrays of equal length)."""

    edge: np.ndarray  # int64, -1: time before the first recorded node
    start_us: np.ndarray
    dur_us: np.ndarray
    slack: np.ndarray  # bool: the wait part of the edge, not its own cost


def walk(g: Graph, t_us: np.ndarray, w_us: np.ndarray, binding: np.ndarray, end: int,
         t_start: float, lists: tuple | None = None) -> Pieces:
    """The path from `end` back to time t_start along binding edges, as pieces clipped at
    t_start: per edge its own part [t_src, t_src + w] and its slack [t_src + w, t_dst].
    `lists` = as_lists(...) saves the conversion when walking many steps."""
    e, head = path_edges(g, t_us, binding, end, t_start, lists or as_lists(g, t_us, binding))
    t0, t1 = t_us[g.src[e]], t_us[g.dst[e]]
    own_end = np.minimum(t0 + w_us[e], t1)
    a_own = np.maximum(t0, t_start)
    a_slack = np.maximum(own_end, t_start)
    # interleave: each edge's own part, then its slack, after the head's piece if any; written
    # into place (column_stack, repeat and r_ copies were 7.0 → 3.3 ms for the DDP trace's
    # whole-trace path of 193k edges, median of 21)
    h = int(head >= 0)
    n = h + 2 * len(e)
    edge, start, dur, slack = np.empty(n, np.int64), np.empty(n), np.empty(n), np.empty(n, bool)
    edge[h::2], edge[h + 1::2] = e, e
    start[h::2], start[h + 1::2] = a_own, a_slack
    np.subtract(own_end, a_own, out=dur[h::2])
    np.subtract(t1, a_slack, out=dur[h + 1::2])
    slack[h::2], slack[h + 1::2] = False, True
    if h:
        edge[0], start[0], dur[0], slack[0] = -1, t_start, t_us[head] - t_start, True
    keep = np.flatnonzero(dur > 1e-9)
    return Pieces(edge[keep], start[keep], dur[keep], slack[keep])


def as_lists(g: Graph, t_us: np.ndarray, binding: np.ndarray) -> tuple:
    return walk_lists(g, t_us, binding)


def _kinds(ctx: Context, g: Graph) -> tuple[list[str], int]:
    """Kind labels: SEG_KINDS, then 'kernel:<class>' per kernel class."""
    return list(SEG_KINDS) + [f"kernel:{c}" for c in ctx.classes.names], len(SEG_KINDS)


def _codes(ctx: Context, g: Graph, p: Pieces) -> tuple[np.ndarray, np.ndarray]:
    """(kind id, name key) per piece. Name keys: (name id + 1) * ET + edge type for own parts (a
    kernel, an op, a launch's latency) by name id, −1 − edge type for slack, −99 for 'nothing recorded'."""
    e = np.maximum(p.edge, 0)
    et, seg, row = g.etype[e].astype(np.int64), g.seg[e].astype(np.int64), g.row[e]
    cls = ctx.classes.class_id[np.maximum(row, 0)].astype(np.int64)
    kind = np.where(seg == KERNEL, len(SEG_KINDS) + np.maximum(cls, 0), seg)
    # a sync edge's wait is sync_wait, or the allocator's when a freeing call synced the device
    waited = np.where(seg == ALLOC, ALLOC, SEG_KINDS.index("sync_wait"))
    kind = np.where(p.slack, np.where(et == E_SYNC, waited, SEG_KINDS.index("idle")), kind)
    nid = np.where(row >= 0, ctx.trace.name_id[np.maximum(row, 0)].astype(np.int64), -1)
    name = np.where(p.slack, -1 - et, (nid + 1) * ET + et)
    none = p.edge < 0
    kind[none], name[none] = SEG_KINDS.index("idle"), -99
    return kind, name


def _name(ctx: Context, key: int) -> str:
    if key == -99:
        return "(nothing recorded)"
    if key < 0:
        return SLACK_NAMES.get(-1 - key, "(wait)")
    nid, et = divmod(key, ET)
    name = ctx.trace.names[nid - 1][:NAME_CHARS] if nid > 0 else "(host, untraced)"
    if et == QUEUED:
        return f"queued behind {name}"
    if et == E_LAUNCH:
        return f"launch latency ({name})"
    if et == E_SYNC:
        return f"sync wake-up ({name})"
    return name


def queued(ctx: Context, g: Graph, p: Pieces, t_us: np.ndarray | None = None) -> tuple[Pieces, np.ndarray, np.ndarray,
                                                                                      float]:
    """The path's pieces with its idle and launch-overhead time split where the device was
    busy, that part billed to the activity that ran (queueing.py): (pieces, kind, name,
    queued µs)."""
    kind, name = _codes(ctx, g, p)
    mask = (kind == IDLE) | (kind == LAUNCH)
    if not mask.any() or not (g.etype == E_GPU).any():
        return p, kind, name, 0.0
    src, start, dur, owner = cut(p.start_us, p.dur_us, mask, occupancy(g, g.t_us if t_us is None else t_us))
    kind, name = kind[src], name[src]
    q = np.flatnonzero(owner >= 0)
    row = g.row[owner[q]]
    cls = ctx.classes.class_id[row].astype(np.int64)
    kind[q] = np.where(g.seg[owner[q]] == KERNEL, len(SEG_KINDS) + np.maximum(cls, 0), g.seg[owner[q]])
    name[q] = (ctx.trace.name_id[row].astype(np.int64) + 1) * ET + QUEUED
    return Pieces(p.edge[src], start, dur, p.slack[src]), kind, name, float(dur[q].sum())


def summarise(ctx: Context, g: Graph, p: Pieces, top_k: int, max_segments: int = MAX_SEGMENTS,
              t_us: np.ndarray | None = None) -> dict:
    """Shares per kind, top ops and (capped) segments of one path, all by array ops: the
    fields of a PathStep but its step and start (`path_step`, `path_summary` type them).
    `t_us`: the node times the path was walked under (a what-if's; default the graph's)."""
    labels, _ = _kinds(ctx, g)
    length = float(p.dur_us.sum())
    pct = (lambda x: round(100.0 * x / length, 3)) if length > 0 else (lambda x: 0.0)
    p, kind, name, queued_us = queued(ctx, g, p, t_us)
    by_kind = np.bincount(kind, weights=p.dur_us, minlength=len(labels)) if len(kind) else np.zeros(len(labels))
    order = np.argsort(-by_kind, kind="stable")
    share = {labels[k]: round(float(by_kind[k]), 3) for k in order if by_kind[k] > 0}
    # top ops: group by (kind, name)
    top = []
    if len(kind):
        uniq, tot, cnt, span = _by_key(kind, name + 128, len(labels), len(ctx.trace.names), p.dur_us)
        for i in np.argsort(-tot, kind="stable")[:top_k]:
            k, n = divmod(int(uniq[i]), span)
            top.append(PathOp(kind=labels[k], name=_name(ctx, n - 128), us=round(float(tot[i]), 3),
                              count=int(cnt[i]), share_pct=pct(float(tot[i]))))
    segs, n_raw = _segments(ctx, labels, kind, name, p, max_segments)
    return {
        "length_us": round(length, 3),
        "share_us": share,
        "share_pct": {k: pct(v) for k, v in share.items()},
        "top_ops": top,
        "segments": [_segment(s, pct) for s in segs],
        "segments_merged": n_raw - len(segs),
        "queued_us": round(queued_us, 3),
    }


def _by_key(kind: np.ndarray, name: np.ndarray, n_kinds: int, n_names: int,
            dur: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Groups of equal (kind, name) in ascending order: keys kind * span + name, total dur and
    count per group, and span. name (a _codes key + 128) lies in [0, span). A trace has few
    distinct names (120 on the DDP trace), so the keys index a bincount directly instead of
    np.unique's sort (~20× faster; docs/benchmarks.md, "Timings in docstrings"); the same
    sums, since bincount adds each group's weights in array order either way."""
    span = ET * n_names + ET + 128
    key = kind * span + name
    if n_kinds * span <= max(1 << 16, 4 * len(key)):
        tot = np.bincount(key, weights=dur, minlength=n_kinds * span)
        cnt = np.bincount(key, minlength=n_kinds * span)
        uniq = np.flatnonzero(cnt)
        return uniq, tot[uniq], cnt[uniq], span
    uniq, inv = np.unique(key, return_inverse=True)
    return uniq, np.bincount(inv, weights=dur), np.bincount(inv), span


def _segments(ctx, labels, kind, name, p: Pieces, cap: int) -> tuple[list[list], int]:
    """Adjacent pieces of the same kind and name merge; then at most `cap` remain."""
    if cap <= 0 or not len(kind):
        return [], 0
    end = p.start_us + p.dur_us
    base = np.array([SEG_KINDS.index(lb.split(":")[0]) for lb in labels])[kind]
    new = np.ones(len(kind), dtype=bool)
    new[1:] = (base[1:] != base[:-1]) | (name[1:] != name[:-1]) | (np.abs(p.start_us[1:] - end[:-1]) > 1e-6)
    first = np.flatnonzero(new)
    dur = np.add.reduceat(p.dur_us, first)
    n_raw = len(first)
    if n_raw <= cap:
        return [[SEG_KINDS[base[i]], _name(ctx, int(name[i])), float(p.start_us[i]), float(d), labels[kind[i]]]
                for i, d in zip(first, dur)], n_raw
    # Keep the (cap−1)/2 longest runs as they are; the runs between two kept ones merge into
    # one segment named by its count and coloured by its dominant kind (so ≤ cap segments).
    # All by array ops: 4.5 → 1.4 ms a step on the DDP trace (~37k runs, cap 400; median of 11).
    keep = _longest(dur, (cap - 1) // 2)
    gap = ~keep
    g_lo = np.flatnonzero(gap & np.r_[True, keep[:-1]])  # first run of each gap
    g_hi = np.flatnonzero(gap & np.r_[keep[1:], True]) + 1  # one past its last run
    multi = g_hi - g_lo > 1
    single = keep.copy()
    single[g_lo[~multi]] = True  # a gap of one run stays that run
    m_lo, m_hi = g_lo[multi], g_hi[multi]
    # dominant kind of each merged gap: one bincount over (gap, kind), pieces in order
    n_k = len(labels)
    starts = np.zeros(n_raw + 1, dtype=np.int64)
    starts[m_lo] = 1
    inside = starts.copy()
    inside[m_hi] = -1  # gaps are disjoint and end at a kept run: no index is both
    gap_of_run = np.where(np.cumsum(inside)[:-1] > 0, np.cumsum(starts)[:-1] - 1, -1)
    gap_of_piece = gap_of_run[np.cumsum(new) - 1]
    sel = gap_of_piece >= 0
    w = np.bincount(gap_of_piece[sel] * n_k + kind[sel], weights=p.dur_us[sel],
                    minlength=len(m_lo) * n_k).reshape(len(m_lo), n_k)
    dominant = w.argmax(axis=1) if len(m_lo) else np.zeros(0, np.int64)
    m_first = first[m_lo]
    m_end = np.r_[first[1:], len(kind)][m_hi - 1]
    m_dur = end[m_end - 1] - p.start_us[m_first]
    runs = np.flatnonzero(single)
    at = np.r_[runs, m_lo]
    out = []
    for j in np.argsort(at, kind="stable").tolist():
        if j < len(runs):
            i = runs[j]
            lo = first[i]
            out.append([SEG_KINDS[base[lo]], _name(ctx, int(name[lo])), float(p.start_us[lo]), float(dur[i]),
                        labels[kind[lo]]])
        else:
            j -= len(runs)
            k = int(dominant[j])
            out.append([labels[k].split(":")[0], f"({m_hi[j] - m_lo[j]} segments)", float(p.start_us[m_first[j]]),
                        float(m_dur[j]), labels[k]])
    return out, n_raw


def _longest(x: np.ndarray, m: int) -> np.ndarray:
    """Boolean mask of the m largest entries, ties to the lower index: the first m of
    np.argsort(-x, kind="stable"), found by a partition instead of a sort."""
    n = len(x)
    keep = np.zeros(n, dtype=bool)
    if m <= 0:
        return keep
    if m >= n:
        keep[:] = True
        return keep
    thr = np.partition(x, n - m)[n - m]  # the m-th largest value
    keep = x > thr
    keep[np.flatnonzero(x == thr)[: m - int(keep.sum())]] = True
    return keep


def _segment(s: list, pct) -> PathSegment:
    if s[4].startswith("kernel:"):
        return PathSegment(kind=s[0], name=s[1], start_us=round(s[2], 3), dur_us=round(s[3], 3),
                           kernel_class=s[4].split(":", 1)[1])
    return PathSegment(kind=s[0], name=s[1], start_us=round(s[2], 3), dur_us=round(s[3], 3))


def path_summary(s: dict) -> PathSummary:
    """The length, shares and top ops of a summarised path (no segments)."""
    return PathSummary(length_us=s["length_us"], share_us=s["share_us"], share_pct=s["share_pct"],
                       top_ops=s["top_ops"])


def job_segment_budget(n_ranks: int) -> int:
    """Segments per rank record in a job of n_ranks: the job's budget split over its ranks,
    never above one rank's nor below MIN_RANK_BUDGET (1,000 ranks: 400 each, ~40 MB in all)."""
    return max(MIN_RANK_BUDGET, min(SEGMENT_BUDGET, JOB_SEGMENTS // max(n_ranks, 1)))


def segment_caps(n_steps: int, budget: int = SEGMENT_BUDGET) -> list[int]:
    """Segments kept per step: the budget split over the first DETAIL_STEPS steps, 0 after."""
    detail = min(n_steps, DETAIL_STEPS)
    each = min(MAX_SEGMENTS, budget // detail) if detail else 0
    return [each if i < detail else 0 for i in range(n_steps)]


def critical_path(ctx: Context, top_k: int = 10, graph: Graph | None = None,
                  segment_budget: int = SEGMENT_BUDGET, clock: ClockOffset | None = None) -> CriticalPath:
    """The `critical_path` block of analysis.json (see docs/critical-path.md). `clock`: the
    CPU–GPU clock offset found for this trace (clock.py), shown with its spread."""
    g = graph or build_graph(ctx)
    lists = as_lists(g, g.t_us, g.binding)
    steps = []
    spans = windows(g.t_us, step_bounds(ctx, g))
    occ = occupancy(g, g.t_us)
    err = float(clock.spread_us) if clock is not None and clock.offset_us else 0.0
    violations = []
    for (number, start, end), cap in zip(spans, segment_caps(len(spans), segment_budget)):
        lo, hi = float(g.t_us[start]), float(g.t_us[end])
        pieces = walk(g, g.t_us, g.w_us, g.binding, end, lo, lists)
        s = summarise(ctx, g, pieces, top_k, max_segments=cap)
        idle_us = (hi - lo) - occ.busy_us(lo, hi)
        # the invariant (queueing.py): idle and launch overhead only while the device idled
        waited = s["share_us"].get("idle", 0.0) + s["share_us"].get("launch_overhead", 0.0)
        if waited > idle_us + err + INVARIANT_TOL_US:
            violations.append(f"step {number}: {waited:.3f} µs of the path idle or launching, more than the device's "
                              f"{idle_us:.3f} µs idle")
        steps.append(PathStep(step=number, start_us=round(lo, 3), gpu_idle_us=round(idle_us, 3), **s))
    if violations and os.environ.get("TRAINPROF_STRICT_INVARIANTS") == "1":  # the tests: fail where it is made
        raise AssertionError("; ".join(violations))
    # The whole trace: from the last node back to the first thing recorded.
    whole = PathSummary(length_us=0.0, share_pct={}, top_ops=[])
    if g.n_nodes:
        end = int(np.argmax(g.t_us))
        pieces = walk(g, g.t_us, g.w_us, g.binding, end, float(g.t_us.min()), lists)
        whole = path_summary(summarise(ctx, g, pieces, top_k, max_segments=0))
    return CriticalPath(
        method="longest path of the dependency graph (docs/critical-path.md)",
        segment_budget=segment_budget,
        trace=whole,
        steps=steps,
        graph=GraphCounts(nodes=g.n_nodes, edges=g.n_edges, launch_latency_us=round(g.launch_latency_us, 3),
                          **g.counts),
        clock=clock.record() if clock is not None else UNSET,
        violations=violations,
    )
