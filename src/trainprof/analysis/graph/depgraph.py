"""The dependency graph of one rank's trace: which work had to wait for which.

Nodes are points in time, edges are "cannot happen before" with a weight (µs). Everything is
numpy arrays (one entry per node / per edge), never per-node Python objects, so a 200k-event
trace builds in well under a second (HTA builds a networkx graph, one object per node).

* **CPU threads.** Each (pid, tid) is flattened into a chain: the sorted start/end times of
  its cpu_op, user_annotation, ProfilerStep and runtime/driver events are the nodes, and each
  piece between two of them is an edge weighted by its length and attributed to the innermost
  event open there (its "self" time). Nesting and order on a thread are both in that chain.
  HTA draws the same dependencies as start/end nodes per op with nesting edges; both say
  "an op on a thread starts after what ran before it on that thread".
* **GPU streams.** Each kernel/memcpy/memset is a start→end edge (its duration); on each
  stream an edge joins one activity's end to the next one's start (stream order), or, where
  the trace shows the two overlapping, the earlier's start to the later's (their offset).
* **Launches.** Runtime/driver call start → GPU activity start, matched by correlation id
  (trace/links.py). A `cudaGraphLaunch` produces many kernels with one correlation id; every
  one of them gets its launch edge (HTA's one-to-one join drops them: HTA issue #290).
* **Host syncs** (what each waited for: syncs.py): the GPU work → the call's end; a
  device-memory free syncs the device too, billed to the `allocator` kind, as are the other
  allocator calls' pieces.
* **Cross-stream waits** (cudaStreamWaitEvent, how NCCL/DDP order a comm stream against the
  compute stream): the work launched on the thread before its last cudaEventRecord → the
  first work launched after the wait. A collective that waits for its peers waits inside its
  kernel, so its duration already carries that wait; the edge makes the stream behind it wait.
* **Other threads** (autograd's backward thread, DataLoader threads): their idle gaps are
  waits, not work, so they weigh 0 and a "wake" edge ties the thread's next event to the
  main thread's latest node (the thread that called profiler.step()). A main-thread piece
  with no op of its own that other threads cover and whose end follows one of their events'
  end is a wait for that thread: 0 weight and a "join" edge from the releasing end (_joins).

Weights. The *intrinsic* weight `w_us` of an edge is what it costs on its own: a duration,
a launch latency (the median delay of launches that found their stream idle), the sync's
wake-up time after the GPU finished, 0 for pure dependencies. At each node the in-edge whose
arrival (t[src] + w) is latest is the *binding* one; what the node waited beyond it is
`slack_us`, stored on that edge (GPU queueing gaps, waits on things the trace does not show).
Baseline times are then reproduced exactly, the critical path is the chain of binding
edges (critical_path.py), and a what-if re-times the graph with edited weights (whatif.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from trainprof.analysis.timeline import intervals as iv
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.timeline.idle import ALLOC_CALLS, DATALOADER, rows_named
from trainprof.analysis.graph.syncs import LaunchIndex, host_sync_pairs, wait_pairs
from trainprof.trace import Kind
from trainprof.trace.nesting import group_ids, innermost_open, parents

# Segment kinds: what a piece of the critical path is (analysis.json vocabulary).
SEG_KINDS = ("cpu_op", "kernel", "launch_overhead", "sync_wait", "communication", "data_loading", "idle", "allocator")
CPU_OP, KERNEL, LAUNCH, SYNC, COMM, DATA, IDLE, ALLOC = range(len(SEG_KINDS))
# Edge types (at most 8: critical_path's name keys hold the type in 3 bits).
E_CPU, E_GPU, E_LAUNCH, E_STREAM, E_SYNC, E_WAIT, E_WAKE, E_JOIN = range(8)
EDGE_TYPES = ("cpu", "gpu", "launch", "stream", "sync", "wait_event", "wake", "join")

CPU_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.PROFILER_STEP, Kind.RUNTIME, Kind.DRIVER)
JOIN_COVER = 0.5  # share of a main-thread piece other threads must cover to count as a wait
# ... and the main thread must resume soon after one of them released it: within this many µs
# or this share of the piece (rank-34's gloo job: the main thread resumed 12 ms after a 1.07 s
# all_reduce on a worker thread ended, 1.1%; loss.backward() returns ~10-100 µs after
# autograd's thread finishes on the shipped DDP traces)
RELEASE_US = 100.0
RELEASE_SHARE = 0.05
LAUNCH_CALL = re.compile(r"Launch|Memcpy.*Async|Memset.*Async|^cu(da)?Graph", re.IGNORECASE)


@dataclass(frozen=True, eq=False)
class Graph:
    t_us: np.ndarray  # float64 per node: the observed time
    lane: np.ndarray  # int64 per node: CPU thread group (>= 0) or -1 - stream index (GPU)
    src: np.ndarray  # int64 per edge
    dst: np.ndarray
    etype: np.ndarray  # int8, E_*
    seg: np.ndarray  # int8, the segment kind of the intrinsic weight
    row: np.ndarray  # int64: the trace row the edge is billed to, -1 none
    w_us: np.ndarray  # float64 intrinsic weight
    slack_us: np.ndarray  # float64: observed wait beyond every constraint, on binding edges
    binding: np.ndarray  # int64 per node: the in-edge that set its time, -1 for sources
    order: np.ndarray  # nodes in an order where every edge goes forward
    row_start: np.ndarray  # int64 per trace row: its start node, -1 when not in the graph
    row_end: np.ndarray
    main_lane: int
    launch_latency_us: float
    counts: dict = field(default_factory=dict)

    @property
    def n_nodes(self) -> int:
        return len(self.t_us)

    @property
    def n_edges(self) -> int:
        return len(self.src)


def _cat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)


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


def build_graph(ctx: Context) -> Graph:
    t = ctx.trace
    n_rows = len(t)
    row_start = np.full(n_rows, -1, dtype=np.int64)
    row_end = np.full(n_rows, -1, dtype=np.int64)
    E: dict[str, list[np.ndarray]] = {k: [] for k in ("src", "dst", "etype", "seg", "row", "w")}

    def add(src, dst, etype, seg, row, w):
        n = len(src)
        E["src"].append(np.asarray(src, np.int64))
        E["dst"].append(np.asarray(dst, np.int64))
        E["etype"].append(np.full(n, etype, np.int8))
        E["seg"].append(np.broadcast_to(np.asarray(seg, np.int8), (n,)).copy())
        E["row"].append(np.broadcast_to(np.asarray(row, np.int64), (n,)).copy())
        E["w"].append(np.broadcast_to(np.asarray(w, np.float64), (n,)).copy())

    # ---- CPU threads: one chain of boundary nodes per (pid, tid) --------------------------
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
    cpu_t, cpu_g = st[new], sg[new]
    n_cpu = len(cpu_t)
    row_start[cpu] = node_of[: len(cpu)]
    row_end[cpu] = node_of[len(cpu):]
    # Temporaries die as soon as they are used: at 1M nodes each is 8-16 MB, and keeping
    # them to the end tripled build_graph's peak (291 MB against 84 MB kept, 200 MB trace).
    del key_g, key_t, order, sg, st, new, node_of
    # pieces between consecutive boundaries of one thread, billed to the innermost open event
    piece = np.flatnonzero(cpu_g[1:] == cpu_g[:-1]) if n_cpu else np.zeros(0, np.int64)
    p_src, p_dst = piece, piece + 1
    p_g = cpu_g[p_src]
    # Nesting on node ids, not times: a thread's nodes are numbered in time order in one
    # block, so (group, start, -end) is the one int64 key start*(n+1) + n-end and "open
    # across the piece after node q" is start <= q < end (nesting.innermost_open).
    s_cpu, e_cpu = row_start[cpu], row_end[cpu]
    nest = np.argsort(s_cpu * (n_cpu + 1) + (n_cpu - e_cpu), kind="stable")
    par = parents(g_cpu, s_cpu, e_cpu, nest)
    inner = innermost_open(nest, s_cpu, e_cpu, par, p_src)
    p_row = np.where(inner >= 0, cpu[np.maximum(inner, 0)], -1)
    del par, inner, nest, s_cpu, e_cpu
    p_w = cpu_t[p_dst] - cpu_t[p_src]
    p_seg = np.full(len(piece), CPU_OP, np.int8)

    # The main thread: the one that called profiler.step(); else the one whose events span
    # the longest time (autograd's thread has more events but only runs in backward).
    step_rows = np.flatnonzero(t.kind[cpu] == Kind.PROFILER_STEP)
    if len(step_rows):
        main_lane = int(np.bincount(g_cpu[step_rows]).argmax())
    elif n_cpu:
        first = np.flatnonzero(np.r_[True, cpu_g[1:] != cpu_g[:-1]])
        last = np.r_[first[1:] - 1, n_cpu - 1]
        main_lane = int(cpu_g[first[np.argmax(cpu_t[last] - cpu_t[first])]])
    else:
        main_lane = -1

    # launch calls (produced GPU activity or are named like a launch) bill launch overhead
    launched = ctx.links.launch[ctx.work]
    is_launch_row = np.zeros(n_rows, dtype=bool)
    is_launch_row[launched[launched >= 0]] = True  # repeats are harmless: np.unique cost 3.1 ms
    launch_named = rows_named(ctx, LAUNCH_CALL, cpu[t.mask(Kind.RUNTIME, Kind.DRIVER)[cpu]])
    is_launch_row[launch_named] = True
    has_row = p_row >= 0
    p_seg[has_row & is_launch_row[np.maximum(p_row, 0)]] = LAUNCH
    # allocator calls (cudaMalloc/cudaFree, hip*): their own class, not host launch
    is_alloc_row = np.zeros(n_rows, dtype=bool)
    is_alloc_row[rows_named(ctx, ALLOC_CALLS, cpu[t.mask(Kind.RUNTIME, Kind.DRIVER)[cpu]])] = True
    p_seg[has_row & is_alloc_row[np.maximum(p_row, 0)]] = ALLOC
    # data loading: inside a DataLoader range on the same thread
    dl = rows_named(ctx, DATALOADER, cpu)
    p_seg[inside_nodes(row_start[dl], row_end[dl], p_src)] = DATA
    # idle gaps of threads other than the main one are waits
    gap_other = (~has_row) & (p_g != main_lane)
    p_w = np.where(gap_other, 0.0, p_w)
    p_seg[gap_other] = IDLE
    # main-thread waits for other threads (autograd's, a future's, a lock's): 0 weight plus a
    # join edge from the event whose end released them
    join, join_src = _joins(t, cpu, g_cpu, main_lane, row_end, cpu_t, p_src, p_dst, p_row, p_g, p_seg, p_w)
    p_w[join] = 0.0
    p_seg[join] = IDLE

    # ---- GPU streams ----------------------------------------------------------------------
    work = ctx.work
    w_order = np.lexsort((t.ts_us[work], t.stream[work], t.device[work]))
    work = work[w_order]
    g_gpu = group_ids(t.device[work], t.stream[work]) if len(work) else np.zeros(0, np.int64)
    n_work = len(work)
    gs = n_cpu + 2 * np.arange(n_work)  # start node of each activity; end = start + 1
    row_start[work], row_end[work] = gs, gs + 1
    gpu_t = np.empty(2 * n_work)
    gpu_t[0::2], gpu_t[1::2] = t.ts_us[work], t.end_us[work]
    gpu_lane = np.repeat(-1 - g_gpu, 2)
    comm_id = ctx.classes.names.index("communication") if "communication" in ctx.classes.names else -99
    gpu_seg = np.where(ctx.classes.class_id[work] == comm_id, COMM, KERNEL).astype(np.int8)

    t_all = np.concatenate([cpu_t, gpu_t])
    lane = np.concatenate([cpu_g, gpu_lane]).astype(np.int64)

    add(gs, gs + 1, E_GPU, gpu_seg, work, t.dur_us[work])
    same = np.flatnonzero(g_gpu[1:] == g_gpu[:-1])
    prev_end = np.full(n_work, -np.inf)
    prev_end[same + 1] = t.end_us[work[same]]
    # Stream order: the next activity starts after the previous one ends. Where the trace
    # shows them overlapping (timestamp rounding, programmatic dependent launch), an end →
    # start edge would go back in time and be dropped, leaving the next one free to move
    # before its predecessor in a what-if; instead it starts no earlier after the previous
    # one's start than it did (a start → start edge weighing the observed offset, billed to
    # the previous activity, which is what ran then).
    ov = t.end_us[work[same]] > t.ts_us[work[same + 1]]
    seq, lap = same[~ov], same[ov]
    add(gs[seq] + 1, gs[seq + 1], E_STREAM, IDLE, -1, 0.0)
    add(gs[lap], gs[lap + 1], E_STREAM, gpu_seg[lap], work[lap], t.ts_us[work[lap + 1]] - t.ts_us[work[lap]])

    # ---- launches -------------------------------------------------------------------------
    launch = ctx.links.launch[work]
    ok = (launch >= 0) & (row_start[np.maximum(launch, 0)] >= 0)
    lw, lcall = np.flatnonzero(ok), launch[ok]
    delay = t.ts_us[work[lw]] - t.ts_us[lcall]
    idle_stream = prev_end[lw] <= t.ts_us[lcall]
    latency = float(np.median(delay[idle_stream & (delay >= 0)])) if (idle_stream & (delay >= 0)).any() else 0.0
    add(row_start[lcall], gs[lw], E_LAUNCH, LAUNCH, lcall, np.minimum(latency, np.maximum(delay, 0.0)))

    # ---- host syncs and cross-stream waits --------------------------------------------------
    syncs, sync_end, n_sync, n_wait = _sync_edges(ctx, cpu, g_cpu, work, g_gpu, row_start, row_end, add)
    # A sync call's own piece costs only its wake-up after the GPU finished; the wait itself
    # is the sync edge (so a faster GPU shortens it, and removing the sync removes both).
    # A freeing allocator call syncs the device too, but stays in the allocator's class.
    is_sync = np.isin(p_row, syncs)
    p_seg[is_sync & ~is_alloc_row[np.maximum(p_row, 0)]] = SYNC
    if is_sync.any():
        kend = np.array([sync_end.get(int(r), -np.inf) for r in p_row[is_sync]])
        s0, s1 = cpu_t[p_src[is_sync]], cpu_t[p_dst[is_sync]]
        p_w[is_sync] = np.maximum(0.0, s1 - np.maximum(s0, kend))
    add(p_src, p_dst, E_CPU, p_seg, p_row, p_w)

    # ---- wake edges: another thread's event after an idle gap waits for the main thread ----
    first = np.flatnonzero(np.r_[True, cpu_g[1:] != cpu_g[:-1]]) if n_cpu else np.zeros(0, np.int64)
    wake_dst = np.concatenate([first[cpu_g[first] != main_lane], p_dst[gap_other]])
    if len(wake_dst) and main_lane >= 0:
        main_nodes = np.flatnonzero(cpu_g == main_lane)
        k = np.searchsorted(cpu_t[main_nodes], cpu_t[wake_dst], side="right") - 1
        keep = k >= 0
        add(main_nodes[k[keep]], wake_dst[keep], E_WAKE, IDLE, -1, 0.0)

    add(join_src, p_dst[join], E_JOIN, IDLE, -1, 0.0)

    del piece, p_src, p_dst, p_w, p_seg, p_row, p_g, has_row, gap_other, is_sync, cpu_t, gpu_t
    src, dst = _cat(E.pop("src"), np.int64), _cat(E.pop("dst"), np.int64)
    etype, seg = _cat(E.pop("etype"), np.int8), _cat(E.pop("seg"), np.int8)
    row, w = _cat(E.pop("row"), np.int64), _cat(E.pop("w"), np.float64)
    # An edge whose source happened after its destination (clock skew, a wrong guess) is no
    # dependency the run obeyed: drop it. Weights never exceed the observed gap. What is
    # left must be acyclic: edges between equal times that no order can put forward (a
    # zero-length launch and sync through one node) are dropped too, so every walk ends.
    gap = t_all[dst] - t_all[src]
    keep = (gap >= 0) & (src != dst)
    order = topo_order(t_all, src[keep], dst[keep])
    pos = np.empty(len(t_all), dtype=np.int64)
    pos[order] = np.arange(len(t_all))
    keep[keep] = pos[src[keep]] < pos[dst[keep]]
    dropped = int((~keep).sum())
    # one at a time, so each old column is freed before the next copy is made
    src = src[keep]
    dst = dst[keep]
    etype = etype[keep]
    seg = seg[keep]
    row = row[keep]
    w = np.clip(w[keep], 0.0, gap[keep])
    del gap, keep
    binding, slack = _bind(t_all, src, dst, w)
    # group ids are dense (nesting.group_ids) and every group has nodes: max + 1 is the count
    # (two np.unique sorts cost 3.9 ms on the DDP trace, median of 21)
    counts = {"cpu_threads": int(g_cpu.max()) + 1 if len(g_cpu) else 0,
              "streams": int(g_gpu.max()) + 1 if len(g_gpu) else 0,
              "launch_edges": int(len(lw)), "sync_edges": n_sync, "wait_edges": n_wait,
              "dropped_edges": dropped,
              "graph_launch_kernels": _graph_launch_kernels(ctx, work, launch)}
    return Graph(t_us=t_all, lane=lane, src=src, dst=dst, etype=etype, seg=seg, row=row, w_us=w,
                 slack_us=slack, binding=binding, order=order,
                 row_start=row_start, row_end=row_end, main_lane=main_lane,
                 launch_latency_us=latency, counts=counts)


def _joins(t, cpu, g_cpu, main_lane, row_end, cpu_t, p_src, p_dst, p_row, p_g, p_seg, p_w):
    """Main-thread pieces that wait for another thread, and the node that released each.

    A piece of the main thread with no op of its own (time outside every event, or only an
    annotation's or ProfilerStep's self time: `loss.backward()` blocking on autograd's
    thread, a `concurrent.futures` result, a lock, a collective's `work.wait()`) is a wait
    when other threads' events cover ≥ JOIN_COVER of it and one of those events ends shortly
    before the main thread goes on (within RELEASE_US or RELEASE_SHARE of the piece): that
    event's end released it. Without the second test, a main thread doing Python work while
    a pin-memory thread runs would be called a wait."""
    kinds = t.kind[np.maximum(p_row, 0)]
    own = (p_row >= 0) & ~np.isin(kinds, [Kind.USER_ANNOTATION, Kind.PROFILER_STEP])
    cand = np.flatnonzero(~own & (p_g == main_lane) & (p_seg != DATA) & (p_w > 0))
    others = cpu[g_cpu != main_lane]
    none = np.zeros(0, np.int64)
    if not len(cand) or not len(others):
        return none, none
    a, b = cpu_t[p_src[cand]], cpu_t[p_dst[cand]]
    cover = iv.covered_within(t.ts_us[others], t.end_us[others], a, b)
    # the latest other-thread event end at or before each piece's end
    o = np.argsort(t.end_us[others], kind="stable")
    ends, end_node = t.end_us[others][o], row_end[others][o]
    k = np.searchsorted(ends, b, side="right") - 1
    rel = np.where(k >= 0, ends[np.maximum(k, 0)], -np.inf)
    ok = (cover >= JOIN_COVER * (b - a)) & (rel > a) & (b - rel <= np.maximum(RELEASE_US, RELEASE_SHARE * (b - a)))
    return cand[ok], end_node[k[ok]]


def _graph_launch_kernels(ctx: Context, work: np.ndarray, launch: np.ndarray) -> int:
    ids = ctx.trace.name_ids("cudaGraphLaunch", "cudaGraphLaunch_v10000", "hipGraphLaunch", "cuGraphLaunch")
    ok = launch >= 0
    return int(np.isin(ctx.trace.name_id[launch[ok]], ids).sum()) if len(ids) else 0


def _sync_edges(ctx, cpu, g_cpu, work, g_gpu, row_start, row_end, add):
    """Edges GPU work end → sync call end, and GPU work end → GPU work start across streams
    (the targets: syncs.py)."""
    t = ctx.trace
    idx = LaunchIndex.build(ctx, cpu, g_cpu, work, g_gpu)
    syncs, frees, p_sync, p_work, _ = host_sync_pairs(ctx, idx, cpu, g_cpu, work)
    p_end = t.end_us[work[p_work]]
    if len(p_sync):
        # The edge's own weight is the call's wake-up after the later of its start and the
        # work's end: a sync on work that had long finished waited for nothing, and an edge
        # weighing the whole interval since would hold the call's end in place in a what-if
        # (nccl_data's cudaEventSynchronize: 119 ms on a 9 µs call).
        add(row_end[work[p_work]], row_end[p_sync], E_SYNC, np.where(np.isin(p_sync, frees), ALLOC, SYNC), p_sync,
            np.maximum(0.0, t.end_us[p_sync] - np.maximum(t.ts_us[p_sync], p_end)))
    sync_end: dict[int, float] = {}
    if len(p_sync):
        uniq, inv = np.unique(p_sync, return_inverse=True)
        latest = np.full(len(uniq), -np.inf)
        np.maximum.at(latest, inv, p_end)
        sync_end = dict(zip(uniq.tolist(), latest.tolist()))
    src_k, dst_k = wait_pairs(ctx, idx, cpu, g_cpu, work, g_gpu)
    if len(src_k):
        add(row_end[work[src_k]], row_start[work[dst_k]], E_WAIT, IDLE, -1, 0.0)
    return syncs, sync_end, len(p_sync), len(src_k)


def _bind(t: np.ndarray, src: np.ndarray, dst: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Binding in-edge per node (latest arrival; ties: the latest-starting source) and the
    slack that edge carries (observed time − its arrival)."""
    binding = binding_edges(t, src, dst, w, len(t))
    slack = np.zeros(len(src))
    has = binding >= 0
    nodes = np.flatnonzero(has)
    e = binding[has]
    slack[e] = np.maximum(0.0, t[nodes] - (t[src[e]] + w[e]))
    return binding, slack


def binding_edges(t: np.ndarray, src: np.ndarray, dst: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    """For each node, the in-edge with the latest arrival t[src] + w (-1 when none). Edges
    with w = -inf are absent. Ties go to the latest source, then to the later edge."""
    out = np.full(n, -1, dtype=np.int64)
    live = np.flatnonzero(np.isfinite(w))
    if not len(live):
        return out
    # A node with one live in-edge (most: a thread's or a stream's run) is bound by it; only
    # junctions need the sort: median of 7, A100 control trace (121k nodes) 8.0 → 3.4 ms, DDP
    # V100 (238k) 14.4 → 5.6 ms, the same bindings on every shipped trace.
    d_live = dst[live]
    single = np.bincount(d_live, minlength=n)[d_live] == 1
    out[d_live[single]] = live[single]
    live = live[~single]
    arrival = t[src[live]] + w[live]
    with np.errstate(over="ignore"):  # a fuzzed trace's ~1e308 times overflow the rounding's × 1e6 (to inf: ties)
        arrival = np.round(arrival, 6)
    o = np.lexsort((live, t[src[live]], arrival, dst[live]))
    d = dst[live][o]
    last = np.ones(len(o), dtype=bool)
    last[:-1] = d[1:] != d[:-1]
    out[d[last]] = live[o[last]]
    return out


def topo_order(t: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Nodes by time; equal times ordered so that edges go forward (a zero-length launch or
    sync edge between two nodes at the same µs). Each pass ranks a backward edge's head
    after its tail; passes stop when the count of backward edges stops falling (a cycle
    through equal times cannot be fixed: build_graph drops what is still backward)."""
    rank = np.zeros(len(t), dtype=np.int64)
    order = np.lexsort((rank, t))
    last = None
    for _ in range(16):
        pos = np.empty(len(t), dtype=np.int64)
        pos[order] = np.arange(len(t))
        bad = pos[src] >= pos[dst]
        n_bad = int(bad.sum())
        if not n_bad or (last is not None and n_bad >= last):
            break
        last = n_bad
        np.maximum.at(rank, dst[bad], rank[src[bad]] + 1)
        order = np.lexsort((rank, t))
    return order
