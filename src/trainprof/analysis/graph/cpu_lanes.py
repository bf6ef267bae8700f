"""The CPU side of the dependency graph (depgraph.py): one chain of nodes per thread, the
pieces between them billed to the innermost open event, what each piece is (op, launch
overhead, allocator, data loading, another thread's idle gap, the main thread's wait for
another thread) and the wake and join edges that tie the threads together.

* **Chains.** Each (pid, tid) is flattened into a chain: the sorted start/end times of its
  cpu_op, user_annotation, ProfilerStep and runtime/driver events are the nodes, and each
  piece between two of them is an edge weighted by its length and attributed to the innermost
  event open there (its "self" time). Nesting and order on a thread are both in that chain.
* **Other threads** (autograd's backward thread, DataLoader threads): their idle gaps are
  waits, not work, so they weigh 0 and a "wake" edge ties the thread's next event to the
  main thread's latest node (the thread that called profiler.step()). A main-thread piece
  with no op of its own that other threads cover and whose end follows one of their events'
  end is a wait for that thread: 0 weight and a "join" edge from the releasing end (_joins).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainprof import namematch
from trainprof.analysis.graph.edge_kinds import ALLOC, CPU_KINDS, CPU_OP, DATA, E_JOIN, E_WAKE, IDLE, LAUNCH, Edges
from trainprof.analysis.timeline import intervals as iv
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.timeline.idle import ALLOC_CALLS, DATALOADER, rows_named
from trainprof.trace import Kind, Trace
from trainprof.trace.nesting import group_ids, innermost_open, parents

JOIN_COVER = 0.5  # share of a main-thread piece other threads must cover to count as a wait
# ... and the main thread must resume soon after one of them released it: within this many µs
# or this share of the piece (rank-34's gloo job: the main thread resumed 12 ms after a 1.07 s
# all_reduce on a worker thread ended, 1.1%; loss.backward() returns ~10-100 µs after
# autograd's thread finishes on the shipped DDP traces)
RELEASE_US = 100.0
RELEASE_SHARE = 0.05
LAUNCH_CALL = namematch.compile(r"Launch|Memcpy.*Async|Memset.*Async|^cu(da)?Graph", ignorecase=True)


@dataclass(frozen=True, eq=False)
class Chains:
    """The CPU nodes: rows (trace rows of the CPU events), group (their thread group), and per
    node its time t and thread lane; a thread's nodes are one block, in time order."""

    rows: np.ndarray
    group: np.ndarray
    t: np.ndarray
    lane: np.ndarray

    @property
    def n(self) -> int:
        return len(self.t)


@dataclass(eq=False)
class Pieces:
    """The edges between consecutive nodes of one thread: src → dst (= src + 1), the trace
    row billed (-1: none open), weight, segment kind and thread lane; w and seg are refined
    as the pieces are classified."""

    src: np.ndarray
    dst: np.ndarray
    row: np.ndarray
    w: np.ndarray
    seg: np.ndarray
    lane: np.ndarray


def cpu_chains(t: Trace, row_start: np.ndarray, row_end: np.ndarray) -> Chains:
    """Number the CPU threads' boundary times (equal times on a thread share a node); each
    CPU event's start and end node go into row_start / row_end."""
    cpu = np.flatnonzero(t.mask(*CPU_KINDS))
    g_cpu = group_ids(t.pid[cpu], t.tid[cpu]) if len(cpu) else np.zeros(0, np.int64)
    key_g = np.concatenate([g_cpu, g_cpu])
    key_t = np.concatenate([t.ts_us[cpu], t.end_us[cpu]])
    order = np.lexsort((key_t, key_g))
    sg, st = key_g[order], key_t[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (sg[1:] != sg[:-1]) | (st[1:] != st[:-1])
    node_of = np.empty(len(order), dtype=np.int64)
    node_of[order] = np.cumsum(new) - 1
    row_start[cpu] = node_of[: len(cpu)]
    row_end[cpu] = node_of[len(cpu):]
    # Temporaries die with this function: at 1M nodes each is 8-16 MB, and keeping them to the
    # end of the build tripled build_graph's peak (291 MB against 84 MB kept, 200 MB trace).
    return Chains(rows=cpu, group=g_cpu, t=st[new], lane=sg[new])


def cpu_pieces(ch: Chains, row_start: np.ndarray, row_end: np.ndarray) -> Pieces:
    """Pieces between consecutive boundaries of one thread, billed to the innermost open event."""
    piece = np.flatnonzero(ch.lane[1:] == ch.lane[:-1]) if ch.n else np.zeros(0, np.int64)
    # Nesting on node ids, not times: a thread's nodes are numbered in time order in one
    # block, so (group, start, -end) is the one int64 key start*(n+1) + n-end and "open
    # across the piece after node q" is start <= q < end (nesting.innermost_open).
    s_cpu, e_cpu = row_start[ch.rows], row_end[ch.rows]
    nest = np.argsort(s_cpu * (ch.n + 1) + (ch.n - e_cpu), kind="stable")
    par = parents(ch.group, s_cpu, e_cpu, nest)
    inner = innermost_open(nest, s_cpu, e_cpu, par, piece)
    p_row = np.where(inner >= 0, ch.rows[np.maximum(inner, 0)], -1)
    return Pieces(src=piece, dst=piece + 1, row=p_row, w=ch.t[piece + 1] - ch.t[piece],
                  seg=np.full(len(piece), CPU_OP, np.int8), lane=ch.lane[piece])


def main_lane(t: Trace, ch: Chains) -> int:
    """The main thread: the one that called profiler.step(); else the one whose events span
    the longest time (autograd's thread has more events but only runs in backward)."""
    step_rows = np.flatnonzero(t.kind[ch.rows] == Kind.PROFILER_STEP)
    if len(step_rows):
        return int(np.bincount(ch.group[step_rows]).argmax())
    if ch.n:
        first = np.flatnonzero(np.r_[True, ch.lane[1:] != ch.lane[:-1]])
        last = np.r_[first[1:] - 1, ch.n - 1]
        return int(ch.lane[first[np.argmax(ch.t[last] - ch.t[first])]])
    return -1


def classify_pieces(ctx: Context, ch: Chains, p: Pieces, row_start: np.ndarray, row_end: np.ndarray,
                    main: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What each piece is (p.seg and p.w refined in place): launch overhead, allocator, data
    loading, another thread's idle gap (0 weight), the main thread's wait for another thread
    (0 weight; its releasing node). Returns (allocator rows mask, other threads' gaps, joined
    pieces, their releasing nodes)."""
    t = ctx.trace
    n_rows = len(t)
    runtime = ch.rows[t.mask(Kind.RUNTIME, Kind.DRIVER)[ch.rows]]
    # launch calls (produced GPU activity or are named like a launch) bill launch overhead
    launched = ctx.links.launch[ctx.work]
    is_launch_row = np.zeros(n_rows, dtype=bool)
    is_launch_row[launched[launched >= 0]] = True  # repeats are harmless: np.unique cost 3.1 ms
    is_launch_row[rows_named(ctx, LAUNCH_CALL, runtime)] = True
    has_row = p.row >= 0
    billed = np.maximum(p.row, 0)
    p.seg[has_row & is_launch_row[billed]] = LAUNCH
    # allocator calls (cudaMalloc/cudaFree, hip*): their own class, not host launch
    is_alloc_row = np.zeros(n_rows, dtype=bool)
    is_alloc_row[rows_named(ctx, ALLOC_CALLS, runtime)] = True
    p.seg[has_row & is_alloc_row[billed]] = ALLOC
    # data loading: inside a DataLoader range on the same thread
    dl = rows_named(ctx, DATALOADER, ch.rows)
    p.seg[inside_nodes(row_start[dl], row_end[dl], p.src)] = DATA
    # idle gaps of threads other than the main one are waits
    gap_other = (~has_row) & (p.lane != main)
    p.w = np.where(gap_other, 0.0, p.w)
    p.seg[gap_other] = IDLE
    # main-thread waits for other threads (autograd's, a future's, a lock's): 0 weight plus a
    # join edge from the event whose end released them
    join, join_src = _joins(t, ch, p, main, row_end)
    p.w[join] = 0.0
    p.seg[join] = IDLE
    return is_alloc_row, gap_other, join, join_src


def _joins(t: Trace, ch: Chains, p: Pieces, main: int, row_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Main-thread pieces that wait for another thread, and the node that released each.

    A piece of the main thread with no op of its own (time outside every event, or only an
    annotation's or ProfilerStep's self time: `loss.backward()` blocking on autograd's
    thread, a `concurrent.futures` result, a lock, a collective's `work.wait()`) is a wait
    when other threads' events cover ≥ JOIN_COVER of it and one of those events ends shortly
    before the main thread goes on (within RELEASE_US or RELEASE_SHARE of the piece): that
    event's end released it. Without the second test, a main thread doing Python work while
    a pin-memory thread runs would be called a wait."""
    kinds = t.kind[np.maximum(p.row, 0)]
    own = (p.row >= 0) & ~np.isin(kinds, [Kind.USER_ANNOTATION, Kind.PROFILER_STEP])
    cand = np.flatnonzero(~own & (p.lane == main) & (p.seg != DATA) & (p.w > 0))
    others = ch.rows[ch.group != main]
    none = np.zeros(0, np.int64)
    if not len(cand) or not len(others):
        return none, none
    a, b = ch.t[p.src[cand]], ch.t[p.dst[cand]]
    cover = iv.covered_within(t.ts_us[others], t.end_us[others], a, b)
    # the latest other-thread event end at or before each piece's end
    o = np.argsort(t.end_us[others], kind="stable")
    ends, end_node = t.end_us[others][o], row_end[others][o]
    k = np.searchsorted(ends, b, side="right") - 1
    rel = np.where(k >= 0, ends[np.maximum(k, 0)], -np.inf)
    ok = (cover >= JOIN_COVER * (b - a)) & (rel > a) & (b - rel <= np.maximum(RELEASE_US, RELEASE_SHARE * (b - a)))
    return cand[ok], end_node[k[ok]]


def thread_edges(ch: Chains, p: Pieces, gap_other: np.ndarray, join: np.ndarray, join_src: np.ndarray,
                 main: int, edges: Edges) -> None:
    """Wake edges (another thread's event after an idle gap waits for the main thread's
    latest node), then join edges (the main thread's wait ends at the releasing node)."""
    first = np.flatnonzero(np.r_[True, ch.lane[1:] != ch.lane[:-1]]) if ch.n else np.zeros(0, np.int64)
    wake_dst = np.concatenate([first[ch.lane[first] != main], p.dst[gap_other]])
    if len(wake_dst) and main >= 0:
        main_nodes = np.flatnonzero(ch.lane == main)
        k = np.searchsorted(ch.t[main_nodes], ch.t[wake_dst], side="right") - 1
        keep = k >= 0
        edges.add(main_nodes[k[keep]], wake_dst[keep], E_WAKE, IDLE, -1, 0.0)
    edges.add(join_src, p.dst[join], E_JOIN, IDLE, -1, 0.0)


def inside_nodes(start: np.ndarray, end: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Boolean per piece (the one after node q): some interval [start, end) on node ids holds
    it. Node ids keep a thread's times in one block, so a running maximum of the ends over
    intervals sorted by start never lets another thread's interval cover q; exact where a
    piece's time midpoint would round onto a boundary (0.25 µs float steps at epoch µs)."""
    if not len(start) or not len(q):
        return np.zeros(len(q), dtype=bool)
    o = np.argsort(start, kind="stable")
    s, e = start[o], np.maximum.accumulate(end[o])
    k = np.searchsorted(s, q, side="right") - 1
    return (k >= 0) & (e[np.maximum(k, 0)] > q)
