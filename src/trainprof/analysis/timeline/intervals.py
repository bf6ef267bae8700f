"""Interval arithmetic on numpy arrays (µs): union, total length, overlap, gaps.

The GPU is "busy" when any stream runs something, so busy time is the length of the union
of activity intervals, not the sum of their durations (HTA's merge_kernel_intervals).
All functions are O(n log n) in a sort, then vectorised.
"""

from __future__ import annotations

import numpy as np

EMPTY = (np.zeros(0), np.zeros(0))


def union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge overlapping or touching intervals; returns sorted, disjoint (starts, ends)."""
    if len(start) == 0:
        return EMPTY
    order = np.argsort(start, kind="stable")
    s, e = np.asarray(start, float)[order], np.asarray(end, float)[order]
    reach = np.maximum.accumulate(e)
    # a new group starts where the interval begins after everything before it has ended
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    idx = np.flatnonzero(new)
    starts = s[idx]
    ends = np.maximum.reduceat(e, idx)
    return starts, ends


def length(start: np.ndarray, end: np.ndarray) -> float:
    """Total length of the union."""
    s, e = union(start, end)
    return float((e - s).sum())


def clip(start: np.ndarray, end: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Intervals cut to [lo, hi]; empty pieces dropped."""
    s, e = np.maximum(start, lo), np.minimum(end, hi)
    keep = e > s
    return s[keep], e[keep]


def intersection_length(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """Length of (∪a) ∩ (∪b), each given as (starts, ends), by a sweep over both unions."""
    (as_, ae), (bs, be) = union(*a), union(*b)
    if len(as_) == 0 or len(bs) == 0:
        return 0.0
    # |A ∩ B| = |A| + |B| − |A ∪ B|
    both = union(np.concatenate([as_, bs]), np.concatenate([ae, be]))
    return float((ae - as_).sum() + (be - bs).sum() - (both[1] - both[0]).sum())


def gaps(start: np.ndarray, end: np.ndarray, lo: float | None = None,
         hi: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Uncovered stretches of [lo, hi] (default: from the first start to the last end)."""
    s, e = union(start, end)
    if len(s) == 0:
        return (np.array([lo]), np.array([hi])) if lo is not None and hi is not None and hi > lo else EMPTY
    lo = s[0] if lo is None else lo
    hi = e[-1] if hi is None else hi
    gs = np.concatenate([[lo], e])
    ge = np.concatenate([s, [hi]])
    gs, ge = np.maximum(gs, lo), np.minimum(ge, hi)
    keep = ge > gs
    return gs[keep], ge[keep]


def covered_within(start: np.ndarray, end: np.ndarray, ws: np.ndarray, we: np.ndarray) -> np.ndarray:
    """For each window [ws_i, we_i], the length of it covered by the union of intervals.

    Vectorised with a prefix sum over the union: covered(x) = union length before x.
    """
    s, e = union(start, end)
    if len(s) == 0:
        return np.zeros(len(ws))
    cum = np.concatenate([[0.0], np.cumsum(e - s)])

    def before(x: np.ndarray) -> np.ndarray:
        i = np.searchsorted(s, x, side="right")  # intervals starting at or before x
        full = cum[np.maximum(i - 1, 0)]
        partial = np.where(i > 0, np.clip(x - s[np.maximum(i - 1, 0)], 0, (e - s)[np.maximum(i - 1, 0)]), 0)
        return np.where(i > 0, full + partial, 0.0)

    return before(np.asarray(we, float)) - before(np.asarray(ws, float))


def subtract(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """∪a minus ∪b, as sorted disjoint intervals."""
    sa, ea = union(*a)
    if not len(sa) or not len(b[0]):
        return sa, ea
    gs, ge = gaps(*b, lo=float(sa[0]), hi=float(ea[-1]))
    # ∪a ∩ gaps(b): both sorted and disjoint; each a-interval cut by the gaps it meets
    out_s, out_e = [], []
    j = 0
    for s, e in zip(sa.tolist(), ea.tolist()):
        while j < len(gs) and ge[j] <= s:
            j += 1
        k = j
        while k < len(gs) and gs[k] < e:
            lo, hi = max(s, gs[k]), min(e, ge[k])
            if hi > lo:
                out_s.append(lo)
                out_e.append(hi)
            k += 1
    return np.asarray(out_s, dtype=float), np.asarray(out_e, dtype=float)
