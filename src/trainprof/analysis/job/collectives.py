"""One rank's collectives, instance by instance, for the cross-rank matching.

Where a collective runs:
- NCCL/RCCL: a communication kernel per collective. Its start is when this rank's stream
  reached it (the rank "arrived"); it then spins until every peer has arrived, so the ends
  agree across ranks and the start differences are the waits. Recent PyTorch writes the
  collective's name, process group, message sizes and dtype into the kernel's args
  (`Collective name`, `Process Group Name`, `In msg nelems`, ...); older traces only have the
  kernel name (`ncclKernel_AllReduce_RING_LL_Sum_float`, `ncclDevKernel_SendRecv`).
- gloo (CPU): a `gloo:<op>` annotation on a gloo worker thread per collective, the same
  arrive-then-wait shape on the host clock.

Identity of an instance, for the cross-rank matching (analysis/job/collectives_align.py): its
process group (`default` where the trace does not record one), op, message elements
(`nelems`) and dtype where known, and `seq`, the k-th instance of that (group, op) on this
rank (a label; the matching aligns whole sequences, it does not pair the k-th instances).
Where the trace records PyTorch's own number of the collective in its process group (`Seq`,
on the kernel's args or on the record_param_comms op its launch ran under), it is kept as
`seq_id`, and the matching pairs by it (the column is there only when the trace has one).
Older NCCL traces carry no collective args on the kernel: then the op and the message size
come from the `c10d::<op>` call that launched it (all_reduce, broadcast, reduce only: their
first input is the message; the list forms of the others are not).

Overlap with compute, per instance: the share of its [arrival, end] interval covered by the
union of this rank's compute (NCCL: compute-class kernels on the same device, i.e. not
communication, memcpy or memset — HTA's get_comm_comp_overlap per collective; gloo: CPU ops
on threads other than gloo's workers, leaving out the c10d/gloo calls and waits themselves).
100% = fully hidden behind compute; 0% = the rank did nothing else meanwhile (the collective
is exposed, or the rank waited for its peers with nothing to do).

Record: compact columns (one list per field), at most MAX_INSTANCES instances per rank;
2,000 collectives take 190 KB of analysis.json per rank (measured on a synthetic block,
indented JSON as written), so a 1,000-rank job adds ~190 MB: the cap is what bounds it.
"""

from __future__ import annotations


import numpy as np
from msgspec import UNSET

from trainprof import namematch
from trainprof.analysis.timeline import intervals as iv
from trainprof.analysis.job import collectives_groups as groups
from trainprof.analysis.job.collectives_ops import (  # noqa: F401  (re-exported: canonical_op, message_bytes)
    FIRST_INPUT_IS_MESSAGE, canonical_op, dtype_bytes, first_input, message_bytes)
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.job.pipeline_rank import stage_ops
from trainprof.recordtypes.collectives import MeshLayout, ProcessGroup, RankCollectives
from trainprof.trace import Kind
from trainprof.trace.steps import step_of
from trainprof.vocab import collectives as cv

MAX_INSTANCES = 5000  # per rank; the first ones in time order are kept (the count says so)

# CPU ops that are the collective itself or a wait for it, not compute running beside it
_COMM_CALL = namematch.compile(r"^(c10d::|gloo:|nccl:|rccl:|record_param_comms|ProcessGroup)|wait", ignorecase=True)


def _side_index(table_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Position of each event row in a side table keyed by ascending row, -1 where absent."""
    if len(table_rows) == 0:
        return np.full(len(rows), -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(table_rows, rows), len(table_rows) - 1)
    return np.where(table_rows[pos] == rows, pos, -1)


class _Instances:
    """Column lists of one rank's collective instances, in time order."""

    def __init__(self) -> None:
        self.op, self.group, self.bytes, self.nelems, self.dtype = [], [], [], [], []
        self.start, self.end, self.step = [], [], []
        self.peer: list[int | None] = []  # point-to-point ops only (gloo): the global peer

    def add(self, op, group, nbytes, nelems, dtype, start, end, step) -> None:
        for col, v in ((self.op, op), (self.group, group), (self.bytes, nbytes), (self.nelems, nelems),
                       (self.dtype, dtype), (self.start, start), (self.end, end), (self.step, step)):
            col.append(v)


def _gpu_instances(ctx: Context, group_sizes: dict) -> tuple[np.ndarray, _Instances, list | None]:
    t = ctx.trace
    rows = ctx.class_rows("communication")
    rows = rows[t.kind[rows] == Kind.KERNEL]
    rows = rows[np.argsort(t.ts_us[rows], kind="stable")]
    side = _side_index(t.collectives.row, rows)
    steps = _gpu_steps(ctx, rows)
    out = _Instances()
    c = t.collectives
    for row, name, pos, step in zip(rows.tolist(), t.names_of(rows), side.tolist(), steps):
        if pos >= 0:
            op = canonical_op(c.name[pos] or name)
            group = c.process_group[pos] or "default"
            if c.group_size[pos] > 0:
                group_sizes[group] = int(c.group_size[pos])
            n_in, n_out = int(c.in_nelems[pos]), int(c.out_nelems[pos])
            nelems = (n_out if op == cv.ALL_GATHER and n_out >= 0 else n_in) if n_in >= 0 else None
            out.add(op, group, message_bytes(op, n_in, n_out, dtype_bytes(c.dtype[pos])), nelems,
                    c.dtype[pos] or None, float(t.ts_us[row]), float(t.end_us[row]), step)
        else:
            op, nelems, dtype = _from_c10d_call(ctx, row, canonical_op(name))
            out.add(op, "default", None, nelems, dtype, float(t.ts_us[row]), float(t.end_us[row]), step)
    return rows, out, _recorded_seq(ctx, rows, side)


def _recorded_seq(ctx: Context, rows: np.ndarray, side: np.ndarray) -> list[int | None] | None:
    """Each kernel's recorded sequence number (`Seq`: PyTorch's number of the collective in
    its process group, torch/csrc/profiler/util.cpp saveNcclMeta): its own args' (recent
    Kineto copies the collective fields onto the kernel), else that of the record_param_comms
    op its launch ran under (up to 4 ops up from the launching op). None when the trace
    records no Seq at all."""
    c = ctx.trace.collectives
    if not len(c) or not (c.seq >= 0).any():
        return None
    seq = np.where(side >= 0, c.seq[np.maximum(side, 0)], -1)
    op = ctx.links.op[rows].astype(np.int64)
    for _ in range(4):
        todo = np.flatnonzero((seq < 0) & (op >= 0))
        if not len(todo):
            break
        pos = _side_index(c.row, op[todo])
        seq[todo] = np.where(pos >= 0, c.seq[np.maximum(pos, 0)], -1)
        op[todo] = ctx.links.op_parent[op[todo]]
    return [int(v) if v >= 0 else None for v in seq.tolist()]


def _gpu_steps(ctx: Context, rows: np.ndarray) -> list[int | None]:
    """ProfilerStep number whose CPU interval holds each kernel's launch (None: none)."""
    if ctx.steps.pseudo or not len(rows):
        return [None] * len(rows)
    idx = step_of(ctx.trace, ctx.links, ctx.steps)[rows]
    return [int(ctx.steps.number[i]) if i >= 0 else None for i in idx.tolist()]


def _from_c10d_call(ctx: Context, row: int, op: str) -> tuple[str, int | None, str | None]:
    """(op, message elements, dtype) from the `c10d::<op>` call that launched a kernel without
    collective args: `ncclKernel_SendRecv` runs all_to_all, all_reduce and all_gather alike
    in older NCCL, so the call names the op better than the kernel does."""
    t, links = ctx.trace, ctx.links
    op_row, hops = int(links.op[row]), 0
    while op_row >= 0 and hops < 4:  # record_param_comms sits under the c10d call
        name = t.names[t.name_id[op_row]]
        if name.startswith("c10d::"):
            call_op = canonical_op(name[len("c10d::"):])
            if call_op == "other":
                return op, None, None
            numel, dtype = first_input(t, op_row) if call_op in FIRST_INPUT_IS_MESSAGE else (None, None)
            return call_op, numel, dtype
        op_row, hops = int(links.op_parent[op_row]), hops + 1
    return op, None, None


def _gloo_instances(ctx: Context) -> _Instances:
    """gloo runs a collective on a worker thread of its group (`gloo:<op>`) after the rank's
    main thread issued it (`c10d::<op>_`): the rank arrived when it issued the call (a worker
    busy with the previous collective delays the annotation, not the rank), and the
    collective ended with the annotation. The k-th call of an op pairs with the k-th
    annotation of that op. The group: the worker thread's, where the run recorded it
    (collectives_groups.py); send/recv run on the calling thread, with their peer."""
    t = ctx.trace

    def by_op(prefix: str) -> dict[str, list[int]]:
        ids = [i for i, n in enumerate(t.names) if n.startswith(prefix)]
        rows = np.flatnonzero(np.isin(t.name_id, ids)) if ids else np.empty(0, dtype=np.int64)
        rows = rows[np.argsort(t.ts_us[rows], kind="stable")]
        out: dict[str, list[int]] = {}
        for row, name in zip(rows.tolist(), t.names_of(rows)):
            out.setdefault(canonical_op(name.split(":")[-1]), []).append(row)
        return out

    work, calls = by_op("gloo:"), by_op("c10d::")
    threads = groups.thread_groups(t)
    p2p = groups.p2p_group(t) if (work.keys() & groups.P2P) else None
    items = []
    for op, rows in work.items():
        issued = calls.get(op, [])
        for k, row in enumerate(rows):
            call = issued[k] if k < len(issued) else None
            start = float(t.ts_us[call]) if call is not None else float(t.ts_us[row])
            numel, dtype = first_input(t, call) if call is not None else (None, None)
            # gloo traces name the list type only; fp32 is the norm
            size = numel * (dtype_bytes(dtype) or 4) if numel is not None else None
            if op in groups.P2P:
                group = p2p[0] if p2p else "default"
                peer = groups.p2p_peer(t, call, p2p[1] if p2p else None)
            else:
                group, peer = threads.get(int(t.tid[row]), "default"), None
            items.append((start, op, group, size, numel, dtype, float(t.end_us[row]), peer))
    items.sort(key=lambda x: x[0])
    step_at = _cpu_step_at(ctx)
    out = _Instances()
    for start, op, group, size, numel, dtype, end, peer in items:
        out.add(op, group, size, numel, dtype, start, end, step_at(start))
        out.peer.append(peer)
    return out


def _cpu_step_at(ctx: Context):
    """t -> the ProfilerStep number whose CPU interval holds t, or None."""
    s = ctx.steps
    if s.pseudo or not len(s):
        return lambda _t: None
    starts, ends, numbers = s.cpu_start_us, s.cpu_end_us, s.number

    def at(t: float) -> int | None:
        i = int(np.searchsorted(starts, t, side="right")) - 1
        return int(numbers[i]) if i >= 0 and t <= ends[i] else None
    return at


def rank_collectives(ctx: Context) -> RankCollectives | None:
    """The `collectives` block of one rank's analysis record, or None without collectives."""
    t = ctx.trace
    group_sizes: dict[str, int] = {}
    rows, x, seq_id = _gpu_instances(ctx, group_sizes)
    source = "nccl"
    if not len(rows):  # gloo: torch 2.13's gloo traces record no Seq (docs/collectives.md)
        x, source, seq_id = _gloo_instances(ctx), "gloo", None
    if not x.op:
        return None
    if source == "gloo":  # the groups' sizes from pg_config (gloo collectives record none)
        group_sizes = {g.name: len(g.ranks) for g in t.meta.process_groups if g.name in set(x.group)}
    seq, counter = [], {}
    for op, g in zip(x.op, x.group):
        k = counter.get((g, op), 0)
        counter[(g, op)] = k + 1
        seq.append(k)
    n = min(len(x.op), MAX_INSTANCES)
    overlap = (_gpu_overlap_pct(ctx, rows[:n]) if source == "nccl"
               else _overlap_pct(*_cpu_compute(ctx), x.start[:n], x.end[:n]))
    steps = ctx.steps
    base = t.meta.base_time_ns
    # Kineto's ts are relative to baseTimeNanoseconds (µs since a Unix time); a trace whose
    # ts are already Unix µs (older Kineto) would count the base twice
    if base and len(t.ts_us) and float(t.ts_us.max()) > base / 1e3 / 10:
        base = None
    return RankCollectives(
        source=source,
        count=len(x.op),
        kept=n,
        # ranks per process group as recorded ("Group size"); the default group: world size
        group_size=group_sizes or ({"default": t.world_size} if t.world_size else {}),
        # ranks whose bases differ are put on one clock with it before matching (None: not
        # recorded, or the ts are absolute already)
        clock_base_us=base / 1e3 if base else None,
        op=x.op[:n],
        group=x.group[:n],
        seq=seq[:n],
        bytes=x.bytes[:n],
        nelems=x.nelems[:n],
        dtype=x.dtype[:n],
        start_us=[round(v, 3) for v in x.start[:n]],
        end_us=[round(v, 3) for v in x.end[:n]],
        step=x.step[:n],
        compute_overlap_pct=overlap,
        # Host-side step entries, shown beside the waits (analysis/job/lateness.py).
        step_number=[] if steps.pseudo else [int(v) for v in steps.number],
        step_cpu_start_us=[] if steps.pseudo else [round(float(v), 3) for v in steps.cpu_start_us],
        # PyTorch's own numbering, where the trace records it (the aligner pairs by it); else unset
        seq_id=seq_id[:n] if seq_id is not None else UNSET,
        peer=x.peer[:n] if any(p is not None for p in x.peer) else UNSET,
        step_cpu_end_us=[] if steps.pseudo else [round(float(v), 3) for v in steps.cpu_end_us],
        process_groups=[ProcessGroup(name=g.name, desc=g.desc, ranks=list(g.ranks))
                        for g in t.meta.process_groups] or UNSET,
        mesh=(MeshLayout(dims=[[a, n] for a, n in t.meta.mesh.dims], schedule=t.meta.mesh.schedule,
                         microbatches=t.meta.mesh.microbatches) if t.meta.mesh is not None else UNSET),
        pipeline=stage_ops(ctx) or UNSET,
    )


def _overlap_pct(cs: np.ndarray, ce: np.ndarray, starts, ends) -> list[float | None]:
    """Per interval, the % of it covered by the union of [cs, ce) (None for zero length)."""
    s, e = np.asarray(starts, dtype=float), np.asarray(ends, dtype=float)
    cov = iv.covered_within(cs, ce, s, e) if len(s) else np.zeros(0)
    return [round(100.0 * c / d, 1) if d > 0 else None for c, d in zip(cov.tolist(), (e - s).tolist())]


def _gpu_overlap_pct(ctx: Context, rows: np.ndarray) -> list[float | None]:
    """Communication kernels against compute kernels of their own device."""
    t = ctx.trace
    out: list[float | None] = [None] * len(rows)
    comp = ctx.compute
    for dev in np.unique(t.device[rows]).tolist():
        mine = np.flatnonzero(t.device[rows] == dev)
        c = comp[t.device[comp] == dev]
        pct = _overlap_pct(t.ts_us[c], t.end_us[c], t.ts_us[rows[mine]], t.end_us[rows[mine]])
        for i, p in zip(mine.tolist(), pct):
            out[i] = p
    return out


def _cpu_compute(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """CPU ops that are compute beside a gloo collective: ops on threads other than gloo's
    workers, without the collective calls and waits themselves — and without the time a
    thread spent inside such a call or wait: an op enclosing a blocking wait (a module's
    forward around tensor parallel's all_reduce) does no compute while its thread waits."""
    t = ctx.trace
    ops = np.flatnonzero(t.kind == Kind.CPU_OP)
    comm_ids = [i for i, n in enumerate(t.names) if _COMM_CALL.search(n)]
    gloo_ids = [i for i, n in enumerate(t.names) if n.startswith("gloo:")]
    workers = np.unique(t.tid[np.isin(t.name_id, gloo_ids)]) if gloo_ids else np.zeros(0, t.tid.dtype)
    ops = ops[~np.isin(t.tid[ops], workers)]
    is_comm = np.isin(t.name_id[ops], comm_ids)
    keep, comm = ops[~is_comm], ops[is_comm]
    if not len(comm):
        return t.ts_us[keep], t.end_us[keep]
    starts, ends = [], []
    for tid in np.unique(t.tid[keep]).tolist():
        k, c = keep[t.tid[keep] == tid], comm[t.tid[comm] == tid]
        s, e = iv.subtract((t.ts_us[k], t.end_us[k]), (t.ts_us[c], t.end_us[c]))
        starts.append(s)
        ends.append(e)
    if not starts:  # every op was a collective call or wait: no compute beside them
        return np.zeros(0), np.zeros(0)
    return np.concatenate(starts), np.concatenate(ends)
