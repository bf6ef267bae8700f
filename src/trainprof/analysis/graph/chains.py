"""Runs of one-in-edge nodes in the dependency graph, re-timed by a prefix sum.

Most nodes of depgraph.py's graph have exactly one in-edge (a CPU thread's next op boundary,
a kernel's end after its start): such a node's time is its parent's plus the edge's weight,
so along a run of them the times are a cumulative sum. Runs hang from *junctions* (nodes
with 0 or ≥ 2 in-edges: a kernel's start waits for its launch and its stream, a sync's end
for the GPU). Re-timing (whatif.py) then needs the max over in-edges only at junctions, in
topological order, and one vectorised prefix sum for everything else; the critical-path walk
(critical_path.py) crosses a whole run as one array slice.

Measured on the 216k-event DDP trace (hta_ddp_2rank_nccl_v100, 238k nodes, 268k edges):
213k nodes lie in runs, so the Python loop visits ~55k junction in-edges instead of 268k.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from trainprof.analysis.graph.depgraph import Graph

try:  # the optional C loops (setup.py; analysis/graph/_loops.c): same results, no Python per hop
    from trainprof.analysis.graph import _loops
except ImportError:
    _loops = None


@dataclass(frozen=True, eq=False)
class Chains:
    root: np.ndarray  # int64 per node: the junction its run hangs from (itself for a junction)
    edge: np.ndarray  # int64 per node: its one in-edge; -1 for a junction
    perm: np.ndarray  # nodes grouped by root: the root, then its run in order
    pos: np.ndarray  # int64 per node: its index in perm
    junctions: np.ndarray  # int64, in topological order
    j_deg: np.ndarray  # int64: in-edges of junction i are the next j_deg[i] of j_edges
    j_edges: np.ndarray  # int64
    j_src_root: np.ndarray  # int64 per j_edge: the junction index of its source's root

    @cached_property
    def j_lists(self) -> tuple[list[int], list[int]]:
        """j_deg and j_src_root as lists, for the Python loop (converted once per graph)."""
        return self.j_deg.tolist(), self.j_src_root.tolist()


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def chains_of(g: Graph) -> Chains:
    """The runs of `g`, built once per graph (a few ms: log2(longest run) numpy passes)."""
    ch = _CACHE.get(g)
    if ch is None:
        ch = _CACHE[g] = _build(g)
    return ch


def _build(g: Graph) -> Chains:
    n = g.n_nodes
    indeg = np.bincount(g.dst, minlength=n)
    single = indeg == 1
    edge = np.full(n, -1, dtype=np.int64)
    hit = single[g.dst]
    edge[g.dst[hit]] = np.flatnonzero(hit)
    parent = np.where(single, g.src[np.maximum(edge, 0)], np.arange(n))
    # A node with two one-in-edge children would make a tree, not a run: they become junctions.
    kids = np.bincount(parent[single], minlength=n)
    single &= kids[parent] <= 1
    edge[~single] = -1
    parent = np.where(single, parent, np.arange(n))
    root = parent
    while True:  # pointer jumping: each pass doubles the distance covered
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    topo = np.empty(n, dtype=np.int64)
    topo[g.order] = np.arange(n)
    # edges go forward in g.order, so a root precedes its run and the run is in path order
    perm = np.lexsort((topo, root))
    pos = np.empty(n, dtype=np.int64)
    pos[perm] = np.arange(n)
    junctions = g.order[~single[g.order]]
    je = np.flatnonzero(~single[g.dst])
    je = je[np.argsort(topo[g.dst[je]], kind="stable")]
    ptr = np.searchsorted(topo[g.dst[je]], topo[junctions], side="left")
    j_index = np.full(n, -1, dtype=np.int64)
    j_index[junctions] = np.arange(len(junctions))
    return Chains(root=root, edge=edge, perm=perm, pos=pos, junctions=junctions,
                  j_deg=np.diff(np.r_[ptr, len(je)]).astype(np.int64), j_edges=je,
                  j_src_root=j_index[root[g.src[je]]])


def retime(g: Graph, w: np.ndarray) -> np.ndarray:
    """Node times under weights w (−inf: edge removed): t[v] = max over live in-edges of
    t[src] + w, a node without one keeps its recorded time. Same recurrence as a loop over
    every node in topological order (what whatif.py did); up to float rounding of the sums.
    Times are summed from the trace's first node: at epoch-scale µs (1.7e15) a float64 step
    is 0.25 µs, and sums there would drift by whole µs."""
    if not g.n_nodes:
        return g.t_us.copy()
    t0 = float(g.t_us.min())
    return _retime(g, w, g.t_us - t0) + t0


def _retime(g: Graph, w: np.ndarray, t_rel: np.ndarray) -> np.ndarray:
    ch = chains_of(g)
    in_run = ch.edge >= 0
    wn = np.zeros(g.n_nodes)
    wn[in_run] = w[ch.edge[in_run]]
    if not np.isfinite(wn).all():  # a run edge removed: its node would keep its own time
        return _retime_loop(g, w, t_rel)
    cs = np.cumsum(wn[ch.perm])
    off = cs[ch.pos] - cs[ch.pos[ch.root]]  # run sum from the root; 0 at junctions
    add = off[g.src[ch.j_edges]] + w[ch.j_edges]
    # Only junction times are read and written in the loop (a root is a junction), so it
    # works on them alone: ~1 in 10 nodes.
    if _loops is not None:
        tj_a = t_rel[ch.junctions]  # a copy (fancy index), updated in place
        _loops.retime_junctions(ch.j_deg, ch.j_src_root, add, tj_a)
        ta = t_rel.copy()
        ta[ch.junctions] = tj_a
        return ta[ch.root] + off
    add = add.tolist()
    tj = t_rel[ch.junctions].tolist()
    ninf = -np.inf
    # in-edges (source's junction, weight) in junction order; most junctions have two (a
    # kernel's launch and its stream), taken without an inner loop: 6.3 → 4.3 ms a re-time
    # on the DDP trace (24k junctions, 55k in-edges; median of 15). Same max, same order.
    j_deg, j_src_root = ch.j_lists
    it = zip(j_src_root, add)
    for i, d in enumerate(j_deg):
        if d == 2:
            (s1, a1), (s2, a2) = next(it), next(it)
            best = tj[s1] + a1
            x = tj[s2] + a2
            if x > best:
                best = x
        else:
            best = ninf
            for _ in range(d):
                s1, a1 = next(it)
                x = tj[s1] + a1
                if x > best:
                    best = x
        if best > ninf:
            tj[i] = best
    ta = t_rel.copy()
    ta[ch.junctions] = tj
    return ta[ch.root] + off


def _retime_loop(g: Graph, w: np.ndarray, t_rel: np.ndarray) -> np.ndarray:
    """The plain recurrence over every node (~0.3 µs per edge), on times t_rel."""
    n = g.n_nodes
    live = np.flatnonzero(np.isfinite(w))
    by_dst = live[np.argsort(g.dst[live], kind="stable")]
    indptr = np.searchsorted(g.dst[by_dst], np.arange(n + 1)).tolist()
    src = g.src[by_dst].tolist()
    wl = w[by_dst].tolist()
    t = t_rel.tolist()
    for v in g.order.tolist():
        a, b = indptr[v], indptr[v + 1]
        if a == b:
            continue
        best = t[src[a]] + wl[a]
        for k in range(a + 1, b):
            x = t[src[k]] + wl[k]
            if x > best:
                best = x
        t[v] = best
    return np.asarray(t)


# A run shorter than this is hopped node by node: checking a slice (array_equal, flatnonzero)
# costs ~10 µs against ~0.4 µs a hop. Four steps' walks, median of 7, every run sliced → runs
# of ≥ 32 sliced: hta_resnet_v100 (~4k hops per step in ~2k short runs) 53.5 → 8.2 ms,
# hta_16rank_hostsync rank0 55.2 → 9.9 ms, hta_ddp_v100 (39k hops, long runs) 18.7 → 14.4 ms;
# 16-64 measure the same, no slicing at all is 101 ms on the DDP trace.
MIN_SLICE = 32


def path_edges(g: Graph, t_us: np.ndarray, binding: np.ndarray, end: int, t_start: float,
               lists: tuple) -> tuple[np.ndarray, int]:
    """Binding edges from `end` back while the node's time is > t_start, in time order, and
    the head (a source later than t_start, else −1). A run whose nodes are bound by their
    one in-edge is taken as one slice of `perm`. With the C loops: every hop in C, no slices."""
    if _loops is not None:
        edges, head = _loops.hop_back(binding, g.src, t_us, int(end), float(t_start))
        return np.frombuffer(edges, dtype=np.int64), int(head)
    ch = chains_of(g)
    bind, src, t, edge_l, root_l, pos_l = lists
    end = int(end)
    out: list[np.ndarray] = []
    buf: list[int] = []
    v, head = end, -1
    while v >= 0 and t[v] > t_start:
        e = bind[v]
        if e < 0:
            head = v
            break
        if e == edge_l[v] and pos_l[v] - pos_l[root_l[v]] >= MIN_SLICE:
            r = root_l[v]
            nodes = ch.perm[pos_l[r] + 1 : pos_l[v] + 1]
            if np.array_equal(binding[nodes], ch.edge[nodes]):
                below = np.flatnonzero(t_us[nodes] <= t_start)
                k = int(below[-1]) + 1 if len(below) else 0
                if buf:
                    out.append(np.array(buf, dtype=np.int64))
                    buf = []
                out.append(ch.edge[nodes[k:]][::-1])
                v = int(nodes[k - 1]) if k else int(r)
                continue
        buf.append(int(e))
        v = int(src[e])
    if buf:
        out.append(np.array(buf, dtype=np.int64))
    edges = np.concatenate(out)[::-1] if out else np.zeros(0, dtype=np.int64)
    return edges, head


def walk_lists(g: Graph, t_us: np.ndarray, binding: np.ndarray) -> tuple:
    """The arrays path_edges reads node by node. Kept as numpy arrays: a walk makes a few
    thousand hops (runs are slices), where list conversion of 6 × 250k entries cost 34 ms."""
    ch = chains_of(g)
    return binding, g.src, t_us, ch.edge, ch.root, ch.pos
