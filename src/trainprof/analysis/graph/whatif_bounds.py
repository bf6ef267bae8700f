"""What a projection may claim: the physics floor and the time an edit removes.

A projected step is checked against two bounds it can never beat, each computed without the
re-timing (so a re-timing bug shows as a violation, not as a smaller bound):

* **floor** — a stream runs its work in order, so a step is never shorter than the busiest
  stream's share of it: per stream, the sum of the (edited) durations of the GPU work the
  steady steps own (path_steps.step_work), ÷ the steady steps. Removing host work cannot go
  below it; scaling kernels moves it (the durations are the edited ones).
* **removed** — re-timing is a longest path: when weights only fall, a node's time falls by at
  most the time removed before it, measured as the union over time of the removed pieces
  (an edge's removed part [t_src, t_src + Δw]; a removed sync edge: the whole sync call,
  which its thread no longer waits in). Per steady step: the union inside the steady
  window, which starts at the earlier of the first steady step's window start and its CPU
  range's start (its host work runs ahead of the GPU). So a removal never gains more than
  the time it removes, and a sync that waited for removed work loses that wait (the sync
  edge from that work is in the graph) but never more.

* **no slower** — a removal (or a scale by ≤ 1) only lowers weights, so under the longest
  path no node is later than measured; the step time, a period from the ramp-up step's end
  (which the edit does not touch: whatif.project), is then never longer than measured.

All hold by construction of the re-timing; the checks below are what makes that a claim
and not a hope: a violation (a model bug on an unforeseen trace) is clamped to the bound and
listed in the scenario's `violations`, and tests assert there is none on every shipped trace.
"""

from __future__ import annotations

import weakref

import numpy as np

from trainprof.analysis.timeline import intervals as iv
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.graph.depgraph import E_GPU, Graph

TOL_US = 1e-3  # re-timed sums from the trace's first node: float error ≪ 1 ns


def removed_union(ctx: Context, g: Graph, w1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted intervals (start, end) of the time the edited weights w1 remove."""
    w0 = g.w_us
    fin = np.isfinite(w1)
    cut = np.flatnonzero(fin & (w1 < w0 - 1e-12))
    gone = np.flatnonzero(~fin & np.isfinite(w0) & (g.row >= 0))
    t = ctx.trace
    s = np.concatenate([g.t_us[g.src[cut]], t.ts_us[g.row[gone]]])
    e = np.concatenate([g.t_us[g.src[cut]] + (w0[cut] - w1[cut]), t.end_us[g.row[gone]]])
    return iv.union(s, e)


def measure(u: tuple[np.ndarray, np.ndarray], lo: float, hi: float) -> float:
    s, e = iv.clip(u[0], u[1], lo, hi)
    return float((e - s).sum())


_EDGE_OF: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def gpu_edges(g: Graph, rows: np.ndarray, n_rows: int) -> np.ndarray:
    """The E_GPU edge (start → end) of each GPU work row that is in the graph (the row → edge
    table built once per graph: 5 scenarios × 2 ms on the 216k-event DDP trace otherwise)."""
    edge_of = _EDGE_OF.get(g)
    if edge_of is None or len(edge_of) != n_rows:
        gpu = np.flatnonzero(g.etype == E_GPU)
        edge_of = np.full(n_rows, -1, dtype=np.int64)
        edge_of[g.row[gpu]] = gpu
        _EDGE_OF[g] = edge_of
    e = edge_of[rows]
    return e[e >= 0]


def claims(ctx: Context, g: Graph, w1: np.ndarray, t_new: np.ndarray, steady: list[tuple[np.ndarray, int, int, int]],
           measured_us: float, projected_us: float, removal: bool = False) -> dict:
    """Floor, removed time and bound of one scenario, with the checks' verdicts.

    `steady`: per steady step (owned GPU work rows, window start node, end node, CPU start
    node), measured windows. `measured_us`/`projected_us`: the scenario's mean step times.
    `removal`: the edits only take time away (removes, scales by ≤ 1), so the projected step
    is never longer than the measured one."""
    n = len(steady)
    if not n or measured_us <= 0:
        return {"floor_us": 0.0, "removed_us": 0.0, "bound_pct": 0.0, "violations": []}
    e = gpu_edges(g, np.concatenate([s[0] for s in steady]), len(ctx.trace))
    lane = -1 - g.lane[g.src[e]]
    per_lane = np.bincount(lane, weights=np.where(np.isfinite(w1[e]), w1[e], 0.0)) if len(e) else np.zeros(1)
    floor_total = float(per_lane.max())
    lo_node, end_node = steady[0][1], steady[-1][2]
    # Work the busiest stream began before the steady window (pipelined across the step
    # boundary) ran partly outside it: the check allows that much.
    first = e[lane == int(np.argmax(per_lane))] if len(e) else e
    slop = max(0.0, float(t_new[lo_node] - t_new[g.src[first]].min())) if len(first) else 0.0
    u = removed_union(ctx, g, w1)
    a = min(float(g.t_us[lo_node]), float(g.t_us[steady[0][3]]))
    b = float(g.t_us[end_node])
    removed_total = measure(u, a, b)
    out = {"floor_us": round(floor_total / n, 3), "removed_us": round(removed_total / n, 3), "violations": []}
    gain_total = n * (measured_us - projected_us)
    if n * projected_us + slop < floor_total - TOL_US * n:
        out["violations"].append(f"projected {projected_us:.3f} µs below the busiest stream's "
                                 f"{floor_total / n:.3f} µs of work per step")
    if gain_total > removed_total + TOL_US * n:
        out["violations"].append(f"gain {gain_total / n:.3f} µs per step above the {removed_total / n:.3f} µs removed")
    if removal and projected_us > measured_us + TOL_US:
        out["violations"].append(f"projected {projected_us:.3f} µs, slower than the measured {measured_us:.3f} µs: "
                                 "removing work never makes a step longer")
    # shrink of the last end ≤ the time removed before it: exact for any re-timing
    shrink = float(g.t_us[end_node] - t_new[end_node])
    if shrink > measure(u, -np.inf, b) + TOL_US:
        out["violations"].append(f"the last step's end moved {shrink:.3f} µs, more than was removed before it")
    cap = min(removed_total / n, max(0.0, measured_us - floor_total / n))
    out["bound_pct"] = round(100.0 * cap / measured_us, 3)
    return out
