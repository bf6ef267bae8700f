"""The dependency graph of one rank's trace: which work had to wait for which.

Nodes are points in time, edges are "cannot happen before" with a weight (µs). Everything is
numpy arrays (one entry per node / per edge), never per-node Python objects, so a 200k-event
trace builds in well under a second (HTA builds a networkx graph, one object per node).

One builder per kind of node or edge, called in a fixed order by build_graph (the order is
the edge numbering): the CPU chains, their pieces and what each piece is (cpu_lanes.py),
the GPU streams, the launches, the syncs and cross-stream waits (here), the wake and join
edges between threads (cpu_lanes.py), then pruning and binding (binding.py).

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
  end is a wait for that thread: 0 weight and a "join" edge from the releasing end
  (cpu_lanes._joins).

Weights. The *intrinsic* weight `w_us` of an edge is what it costs on its own: a duration,
a launch latency (the median delay of launches that found their stream idle), the sync's
wake-up time after the GPU finished, 0 for pure dependencies. At each node the in-edge whose
arrival (t[src] + w) is latest is the *binding* one; what the node waited beyond it is
`slack_us`, stored on that edge (GPU queueing gaps, waits on things the trace does not show).
Baseline times are then reproduced exactly (binding.py), the critical path is the chain of binding
edges (critical_path.py), and a what-if re-times the graph with edited weights (whatif.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trainprof.analysis.graph.binding import binding_edges, prune_and_bind, topo_order  # noqa: F401 (re-exported)
from trainprof.analysis.graph.cpu_lanes import (  # noqa: F401 (inside_nodes re-exported)
    Chains, Pieces, classify_pieces, cpu_chains, cpu_pieces, inside_nodes, main_lane, thread_edges)
from trainprof.analysis.graph.edge_kinds import (  # noqa: F401 (the graph's vocabulary, re-exported)
    ALLOC, COMM, CPU_KINDS, CPU_OP, DATA, E_CPU, E_GPU, E_JOIN, E_LAUNCH, E_STREAM, E_SYNC, E_WAIT, E_WAKE, EDGE_TYPES,
    IDLE, KERNEL, LAUNCH, SEG_KINDS, SYNC, Edges)
from trainprof.analysis.graph.syncs import LaunchIndex, host_sync_pairs, wait_pairs
from trainprof.analysis.timeline.context import Context
from trainprof.trace.nesting import group_ids


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


@dataclass(frozen=True, eq=False)
class Streams:
    """The GPU nodes: the activities (trace rows) in stream order, their stream group, start
    node (end = start + 1), node times and lanes, and each one's predecessor's end on its
    stream (−inf for the first)."""

    work: np.ndarray
    group: np.ndarray
    start: np.ndarray
    t: np.ndarray
    lane: np.ndarray
    prev_end: np.ndarray


def build_graph(ctx: Context) -> Graph:
    """The rank's graph: nodes numbered CPU chains first, then two per GPU activity; edges
    numbered by kind in a fixed order (stream work, stream order, launches, syncs, waits,
    CPU pieces, wakes, joins); then pruned and bound (binding.py)."""
    t = ctx.trace
    row_start = np.full(len(t), -1, dtype=np.int64)
    row_end = np.full(len(t), -1, dtype=np.int64)
    edges = Edges()
    ch = cpu_chains(t, row_start, row_end)
    pieces = cpu_pieces(ch, row_start, row_end)
    main = main_lane(t, ch)
    is_alloc_row, gap_other, join, join_src = classify_pieces(ctx, ch, pieces, row_start, row_end, main)
    gpu = gpu_streams(ctx, ch.n, row_start, row_end, edges)
    launch, n_launch, latency = launch_edges(ctx, gpu, row_start, edges)
    syncs, sync_end, n_sync, n_wait = _sync_edges(ctx, ch.rows, ch.group, gpu.work, gpu.group, row_start, row_end,
                                                  edges)
    sync_pieces(pieces, syncs, sync_end, is_alloc_row, ch.t)
    edges.add(pieces.src, pieces.dst, E_CPU, pieces.seg, pieces.row, pieces.w)
    thread_edges(ch, pieces, gap_other, join, join_src, main, edges)
    t_all = np.concatenate([ch.t, gpu.t])
    lane = np.concatenate([ch.lane, gpu.lane]).astype(np.int64)
    # group ids are dense (nesting.group_ids) and every group has nodes: max + 1 is the count
    # (two np.unique sorts cost 3.9 ms on the DDP trace, median of 21)
    n_threads = int(ch.group.max()) + 1 if len(ch.group) else 0
    n_streams = int(gpu.group.max()) + 1 if len(gpu.group) else 0
    n_graph_launched = _graph_launch_kernels(ctx, gpu.work, launch)
    # the builders' arrays go before the edges are joined: at 1M nodes each is 8-16 MB
    del pieces, gap_other, join, join_src, is_alloc_row, ch, gpu, launch
    b = prune_and_bind(t_all, edges.columns())
    counts = {"cpu_threads": n_threads, "streams": n_streams, "launch_edges": n_launch, "sync_edges": n_sync,
              "wait_edges": n_wait, "dropped_edges": b.dropped, "graph_launch_kernels": n_graph_launched}
    return Graph(t_us=t_all, lane=lane, src=b.src, dst=b.dst, etype=b.etype, seg=b.seg, row=b.row, w_us=b.w,
                 slack_us=b.slack, binding=b.binding, order=b.order,
                 row_start=row_start, row_end=row_end, main_lane=main,
                 launch_latency_us=latency, counts=counts)


def gpu_streams(ctx: Context, n_cpu: int, row_start: np.ndarray, row_end: np.ndarray, edges: Edges) -> Streams:
    """Each kernel/memcpy/memset is a start → end edge (its duration); on each stream an edge
    joins one activity's end to the next one's start (stream order), or, where the trace
    shows the two overlapping, the earlier's start to the later's (their offset)."""
    t = ctx.trace
    work = ctx.work
    work = work[np.lexsort((t.ts_us[work], t.stream[work], t.device[work]))]
    g_gpu = group_ids(t.device[work], t.stream[work]) if len(work) else np.zeros(0, np.int64)
    n_work = len(work)
    gs = n_cpu + 2 * np.arange(n_work)  # start node of each activity; end = start + 1
    row_start[work], row_end[work] = gs, gs + 1
    gpu_t = np.empty(2 * n_work)
    gpu_t[0::2], gpu_t[1::2] = t.ts_us[work], t.end_us[work]
    comm_id = ctx.classes.names.index("communication") if "communication" in ctx.classes.names else -99
    gpu_seg = np.where(ctx.classes.class_id[work] == comm_id, COMM, KERNEL).astype(np.int8)
    edges.add(gs, gs + 1, E_GPU, gpu_seg, work, t.dur_us[work])
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
    edges.add(gs[seq] + 1, gs[seq + 1], E_STREAM, IDLE, -1, 0.0)
    edges.add(gs[lap], gs[lap + 1], E_STREAM, gpu_seg[lap], work[lap], t.ts_us[work[lap + 1]] - t.ts_us[work[lap]])
    return Streams(work=work, group=g_gpu, start=gs, t=gpu_t, lane=np.repeat(-1 - g_gpu, 2), prev_end=prev_end)


def device_busy_until(t, work: np.ndarray) -> np.ndarray:
    """Per work row (in `work` order): the latest end among its device's work begun before it
    (−inf for the first): a launch made after it found the whole device idle."""
    out = np.full(len(work), -np.inf)
    dev = t.device[work]
    for d in np.unique(dev):
        idx = np.flatnonzero(dev == d)
        o = idx[np.argsort(t.ts_us[work[idx]], kind="stable")]
        run = np.maximum.accumulate(t.end_us[work[o]])
        out[o[1:]] = run[:-1]
    return out


def launch_edges(ctx: Context, gpu: Streams, row_start: np.ndarray, edges: Edges) -> tuple[np.ndarray, int, float]:
    """Runtime/driver call start → GPU activity start, matched by correlation id
    (trace/links.py), weighing the launch latency: the median delay of launches that found
    the whole device idle (else, with none, their stream idle), capped at each one's own
    delay. Returns (each activity's launching row, the number of launch edges, the latency)."""
    t = ctx.trace
    launch = ctx.links.launch[gpu.work]
    ok = (launch >= 0) & (row_start[np.maximum(launch, 0)] >= 0)
    lw, lcall = np.flatnonzero(ok), launch[ok]
    delay = t.ts_us[gpu.work[lw]] - t.ts_us[lcall]
    # A launch onto a busy device waits for the work ahead (queueing), not for the host: an
    # idle *stream* is not enough (issue #39: a reduce-scatter on an idle comm stream of a
    # 97.5%-busy H100 waited for SMs, and the median of such delays made every launch
    # "latency"). Measured on the device-idle launches where the trace has any.
    idle = (device_busy_until(t, gpu.work)[lw] <= t.ts_us[lcall]) & (delay >= 0)
    if not idle.any():
        idle = (gpu.prev_end[lw] <= t.ts_us[lcall]) & (delay >= 0)
    latency = float(np.median(delay[idle])) if idle.any() else 0.0
    edges.add(row_start[lcall], gpu.start[lw], E_LAUNCH, LAUNCH, lcall, np.minimum(latency, np.maximum(delay, 0.0)))
    return launch, int(len(lw)), latency


def sync_pieces(p: Pieces, syncs: np.ndarray, sync_end: dict, is_alloc_row: np.ndarray, cpu_t: np.ndarray) -> None:
    """A sync call's own piece costs only its wake-up after the GPU finished; the wait itself
    is the sync edge (so a faster GPU shortens it, and removing the sync removes both). A
    freeing allocator call syncs the device too, but stays in the allocator's class."""
    is_sync = np.isin(p.row, syncs)
    p.seg[is_sync & ~is_alloc_row[np.maximum(p.row, 0)]] = SYNC
    if is_sync.any():
        kend = np.array([sync_end.get(int(r), -np.inf) for r in p.row[is_sync]])
        s0, s1 = cpu_t[p.src[is_sync]], cpu_t[p.dst[is_sync]]
        p.w[is_sync] = np.maximum(0.0, s1 - np.maximum(s0, kend))


def _graph_launch_kernels(ctx: Context, work: np.ndarray, launch: np.ndarray) -> int:
    ids = ctx.trace.name_ids("cudaGraphLaunch", "cudaGraphLaunch_v10000", "hipGraphLaunch", "cuGraphLaunch")
    ok = launch >= 0
    return int(np.isin(ctx.trace.name_id[launch[ok]], ids).sum()) if len(ids) else 0


def _sync_edges(ctx: Context, cpu: np.ndarray, g_cpu: np.ndarray, work: np.ndarray, g_gpu: np.ndarray,
                row_start: np.ndarray, row_end: np.ndarray, edges: Edges) -> tuple[np.ndarray, dict, int, int]:
    """Edges GPU work end → sync call end, and GPU work end → GPU work start across streams
    (the targets: syncs.py). Returns (the sync calls, each one's latest awaited end, the
    number of sync edges, the number of wait edges)."""
    t = ctx.trace
    idx = LaunchIndex.build(ctx, cpu, g_cpu, work, g_gpu)
    syncs, frees, p_sync, p_work, _ = host_sync_pairs(ctx, idx, cpu, g_cpu, work)
    p_end = t.end_us[work[p_work]]
    if len(p_sync):
        # The edge's own weight is the call's wake-up after the later of its start and the
        # work's end: a sync on work that had long finished waited for nothing, and an edge
        # weighing the whole interval since would hold the call's end in place in a what-if
        # (nccl_data's cudaEventSynchronize: 119 ms on a 9 µs call).
        edges.add(row_end[work[p_work]], row_end[p_sync], E_SYNC, np.where(np.isin(p_sync, frees), ALLOC, SYNC), p_sync,
            np.maximum(0.0, t.end_us[p_sync] - np.maximum(t.ts_us[p_sync], p_end)))
    sync_end: dict[int, float] = {}
    if len(p_sync):
        uniq, inv = np.unique(p_sync, return_inverse=True)
        latest = np.full(len(uniq), -np.inf)
        np.maximum.at(latest, inv, p_end)
        sync_end = dict(zip(uniq.tolist(), latest.tolist()))
    src_k, dst_k = wait_pairs(ctx, idx, cpu, g_cpu, work, g_gpu)
    if len(src_k):
        edges.add(row_end[work[src_k]], row_start[work[dst_k]], E_WAIT, IDLE, -1, 0.0)
    return syncs, sync_end, len(p_sync), len(src_k)
