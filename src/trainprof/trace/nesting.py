"""Interval nesting on one thread, vectorised: parents of intervals, and the innermost
interval containing a point.

Events on one CPU thread nest (a cpu_op contains the ops it calls and the runtime calls they
make). The classic answer is a stack sweep: O(n), but a Python loop (~0.5 µs per event).
Here the same semantics run as numpy passes of pointer jumping:

  sort intervals by (group, start, -end): a parent precedes its children;
  candidate parent of j = j - 1; while the candidate closed before j started
  (end <= start_j), jump to the candidate's own candidate.

Skipping is safe because everything between a candidate c and its candidate P[c] closed
before c started, hence before j started. Each round halves the remaining chains, so a
trace needs O(depth + log n) rounds (≈10-20 passes over a shrinking active set).

"Innermost" = the latest-starting interval still open at the point; for properly nested
intervals that is the deepest, i.e. the shortest, one. Slightly overlapping siblings
(clock rounding) resolve to the later one, as a stack sweep would.
"""

from __future__ import annotations

import numpy as np


def group_ids(*keys: np.ndarray) -> np.ndarray:
    """Dense int64 id per row for the tuple of key columns (e.g. pid, tid)."""
    if not len(keys[0]):
        return np.zeros(0, dtype=np.int64)
    cols = [np.asarray(k, dtype=np.int64) for k in keys]
    order = np.lexsort(cols[::-1])  # np.unique(axis=0) is ~10x slower (structured sort)
    new = np.zeros(len(order), dtype=bool)
    new[0] = True
    for c in cols:
        s = c[order]
        new[1:] |= s[1:] != s[:-1]
    out = np.empty(len(order), dtype=np.int64)
    out[order] = np.cumsum(new) - 1
    return out


def nest_order(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Intervals sorted by (group, start, -end): a parent precedes its children. parents()
    and innermost_containing() both need it; a caller that runs both passes it to each (the
    three-key lexsort costs about as much as the rest of parents(): docs/benchmarks.md,
    "Timings in docstrings")."""
    return np.lexsort((-end, start, group))


def parents(group: np.ndarray, start: np.ndarray, end: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Index of each interval's innermost enclosing interval in the same group, or -1.

    An interval encloses j when it starts no later than j (ties: the longer one encloses)
    and is still open when j starts (end > start_j). `order`: nest_order(group, start, end).
    """
    n = len(start)
    out = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return out
    if order is None:
        order = nest_order(group, start, end)
    g, s, e = group[order], start[order], end[order]
    cand = np.arange(-1, n - 1, dtype=np.int64)
    cand[1:][g[1:] != g[:-1]] = -1
    cand[0] = -1
    active = np.flatnonzero(cand >= 0)
    while len(active):
        c = cand[active]
        closed = e[c] <= s[active]
        active = active[closed]
        cand[active] = cand[cand[active]]  # jump; RHS is read before the write
        active = active[cand[active] >= 0]
    out[order] = np.where(cand >= 0, order[np.maximum(cand, 0)], -1)
    return out


def innermost_containing(
    group: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    query_group: np.ndarray,
    query: np.ndarray,
    parent: np.ndarray | None = None,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """For each query point, the index of the innermost interval of its group with
    start <= q <= end, or -1. `parent` (from `parents`) and `order` (nest_order) are
    computed when not given."""
    nq = len(query)
    if nq == 0 or len(start) == 0:
        return np.full(nq, -1, dtype=np.int64)
    if order is None:
        order = nest_order(group, start, end)
    if parent is None:
        parent = parents(group, start, end, order)
    # Merge intervals and queries in (group, time) order; at equal time an interval comes
    # first, so one that starts exactly at q counts as started.
    n = len(start)
    gm = np.concatenate([group[order], query_group]).astype(np.int64)
    tm = np.concatenate([start[order], query])
    typ = np.concatenate([np.zeros(n, np.int8), np.ones(nq, np.int8)])
    sub = np.concatenate([np.arange(n), np.zeros(nq, np.int64)])  # keeps interval order stable
    merged = np.lexsort((sub, typ, tm, gm))
    last = np.where(merged < n, merged, -1)  # position in sorted interval order; -1: query
    last = np.maximum.accumulate(last)
    qpos = np.empty(nq, dtype=np.int64)
    is_q = merged >= n
    qpos[merged[is_q] - n] = last[is_q]
    # Candidate: last interval starting at or before q. Wrong group -> none.
    cand = np.where(qpos >= 0, order[np.maximum(qpos, 0)], -1)
    cand[(cand >= 0) & (group[np.maximum(cand, 0)] != query_group)] = -1
    # Walk up while the candidate ended before q.
    active = np.flatnonzero(cand >= 0)
    while len(active):
        c = cand[active]
        closed = end[c] < query[active]
        active = active[closed]
        cand[active] = parent[cand[active]]
        active = active[cand[active] >= 0]
    return cand


def innermost_open(order: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray,
                   query: np.ndarray) -> np.ndarray:
    """innermost_containing for coordinates that are ranks, not times: for each query q the
    innermost interval with start <= q < end, or -1. `start`/`end` are integer positions on
    one axis where each group owns a contiguous block (a thread's boundary nodes in
    depgraph), `order` sorts by (start, -end) (a parent before its children) and `parent`
    is parents(...) on the same positions. One searchsorted replaces the merge's four-key
    lexsort over intervals + queries (3.6x faster: docs/benchmarks.md, "Timings in docstrings").
    An interval of another group is never returned: its block lies wholly before or after q,
    so it is closed at q or starts after it."""
    nq = len(query)
    if nq == 0 or len(start) == 0:
        return np.full(nq, -1, dtype=np.int64)
    pos = np.searchsorted(start[order], query, side="right") - 1  # last to start at or before q
    cand = np.where(pos >= 0, order[np.maximum(pos, 0)], -1)
    active = np.flatnonzero(cand >= 0)
    while len(active):  # up the parents while the candidate closed at or before q
        c = cand[active]
        active = active[end[c] <= query[active]]
        cand[active] = parent[cand[active]]
        active = active[cand[active] >= 0]
    return cand
