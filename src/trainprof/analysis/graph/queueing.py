"""Queueing, launch overhead and idle on the critical path: what the device was doing meanwhile.

A piece of the path that the walk calls a wait (`idle`: slack the graph cannot explain, a
stream's queue gap, a kernel's start delay) or `launch_overhead` (a launch call, a launch
latency) is either of those only while the device is idle. While other work runs on the
device, the step is not waiting for the host or for nothing: it is **queued** behind that
work (a kernel launched onto a busy GPU waits for the work ahead; a collective waits for
SMs a compute stream holds), and that time is billed to the work that ran — its kind
(`kernel:<class>`, `communication`) and the name `queued behind <kernel>` in the top ops and
segments. Issue #39: on a 97.5%-busy H100, 49–57% of a path was "launch overhead" (the
launch-to-start delays of reduce-scatters queued behind running work); on another rank 59%
was "idle (cross-stream wait)" while the GPU idled 1.1 ms.

Which activity: at each moment the running one that ends last (the device's occupancy is
cut into disjoint pieces, each owned by the activity with the latest end among those begun:
the one the queued work waits longest for). Invariant, checked by critical_path.py on every
step: the path's idle and launch-overhead time ≤ the device's idle time in the step's window.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from trainprof.analysis.graph.edge_kinds import E_GPU

_BASE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Occupancy:
    """Disjoint busy pieces of the device timeline, in time order, each owned by one activity."""

    start: np.ndarray
    end: np.ndarray
    edge: np.ndarray  # the owning activity's E_GPU edge

    def busy_us(self, lo: float, hi: float) -> float:
        """Busy time inside [lo, hi]."""
        if not len(self.start) or hi <= lo:
            return 0.0
        s, e = np.clip(self.start, lo, hi), np.clip(self.end, lo, hi)
        return float((e - s).sum())


def occupancy(g, t_us: np.ndarray) -> Occupancy:
    """The device's occupancy under node times t_us (the graph's own times: cached per graph)."""
    base = t_us is g.t_us
    if base and g in _BASE:
        return _BASE[g]
    e = np.flatnonzero(g.etype == E_GPU)
    s, en = t_us[g.src[e]], t_us[g.dst[e]]
    o = np.lexsort((-en, s))
    e, s, en = e[o], s[o], en[o]
    # leaders: activities whose end passes every end begun before them; leader k owns
    # [its start, min(its end, the next leader's start)] (the others lie inside it)
    lead = np.ones(len(e), dtype=bool)
    if len(e) > 1:
        lead[1:] = en[1:] > np.maximum.accumulate(en)[:-1]
    e, s, en = e[lead], s[lead], en[lead]
    end = np.minimum(en, np.r_[s[1:], np.inf]) if len(e) else en
    occ = Occupancy(start=s, end=end, edge=e)
    if base:
        _BASE[g] = occ
    return occ


def cut(start: np.ndarray, dur: np.ndarray, mask: np.ndarray, occ: Occupancy) -> tuple[np.ndarray, ...]:
    """Pieces (start, dur) split where `mask` at the occupancy's boundaries. Returns (source
    piece, start, dur, owning E_GPU edge or −1) per sub-piece, in order; only the masked
    pieces are split, and a sub-piece has an owner only where the device was busy."""
    n = len(start)
    bnd = np.empty(2 * len(occ.start))
    bnd[0::2], bnd[1::2] = occ.start, occ.end  # sorted: the pieces are disjoint and in order
    a, b = start, start + dur
    j0 = np.searchsorted(bnd, a, side="right")  # boundaries at or before each piece's start
    j1 = np.searchsorted(bnd, b, side="left")
    ncut = np.where(mask, np.maximum(j1 - j0, 0), 0)
    counts = ncut + 1
    src = np.repeat(np.arange(n), counts)
    k = np.arange(len(src)) - np.repeat(np.cumsum(counts) - counts, counts)
    last = max(len(bnd) - 1, 0)
    pos = j0[src] + k - 1  # the last boundary at or before each sub-piece's start
    if len(bnd):
        s2 = np.where(k == 0, a[src], bnd[np.clip(pos, 0, last)])
        e2 = np.where(k == ncut[src], b[src], bnd[np.clip(j0[src] + k, 0, last)])
    else:
        s2, e2 = a[src], b[src]
    # after a start boundary (even index) the device is busy with that piece's owner
    inside = mask[src] & (pos >= 0) & (pos % 2 == 0) & (pos < len(bnd))
    owner = np.where(inside, occ.edge[np.clip(pos // 2, 0, max(len(occ.edge) - 1, 0))] if len(occ.edge) else -1, -1)
    keep = ~mask[src] | (e2 - s2 > 1e-9)
    return src[keep], s2[keep], (e2 - s2)[keep], owner[keep]
