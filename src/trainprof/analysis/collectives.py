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

Matching key: (process group, op, k) where k is the k-th instance of that op in that group on
this rank. PyTorch issues a group's collectives in the same order on every rank (NCCL hangs
otherwise), so the k-th all_reduce of group "0" is the same collective on every rank; this is
TraceLens' fallback when no sequence number is recorded, and the traces we ship record none.

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

import re

import numpy as np

from trainprof.analysis import intervals as iv
from trainprof.analysis.context import Context
from trainprof.trace import Kind

SCHEMA = "trainprof.collectives/1"
MAX_INSTANCES = 5000  # per rank; the first ones in time order are kept (the count says so)

# CPU ops that are the collective itself or a wait for it, not compute running beside it
_COMM_CALL = re.compile(r"^(c10d::|gloo:|nccl:|rccl:|record_param_comms|ProcessGroup)|wait", re.I)

# Canonical op names (nccl-tests' spelling) from kernel names and `Collective name` args.
_OPS = (
    (re.compile(r"all_?reduce", re.I), "all_reduce"),
    (re.compile(r"all_?gather", re.I), "all_gather"),
    (re.compile(r"reduce_?scatter", re.I), "reduce_scatter"),
    (re.compile(r"all_?to_?all", re.I), "all_to_all"),
    (re.compile(r"broadcast", re.I), "broadcast"),
    (re.compile(r"send_?recv", re.I), "send_recv"),
    (re.compile(r"(?<![a-z])send|Send", re.I), "send"),
    (re.compile(r"(?<![a-z])recv|Recv", re.I), "recv"),
    (re.compile(r"barrier", re.I), "barrier"),
    (re.compile(r"reduce", re.I), "reduce"),
    (re.compile(r"gather", re.I), "gather"),
    (re.compile(r"scatter", re.I), "scatter"),
)
_DTYPE_BYTES = {"float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2,
                "bfloat16": 2, "bf16": 2, "int": 4, "int32": 4, "long": 8, "int64": 8, "int8": 1,
                "uint8": 1, "char": 1, "byte": 1, "bool": 1, "short": 2, "int16": 2,
                "float8_e4m3fn": 1, "float8_e5m2": 1}


def canonical_op(name: str) -> str:
    """`ncclDevKernel_AllGather_RING_LL`, `_allgather_base`, `gloo:all_reduce` → `all_gather`…"""
    if name.startswith(("gloo:", "nccl:", "rccl:")):
        name = name.split(":", 1)[1]
    for pattern, op in _OPS:
        if pattern.search(name):
            return op
    return "other"


def dtype_bytes(dtype: str | None) -> int | None:
    return _DTYPE_BYTES.get(dtype.lower().replace("torch.", "")) if dtype else None


def message_bytes(op: str, in_nelems: int, out_nelems: int, elem: int | None) -> int | None:
    """nccl-tests' S: the whole array (all_gather: the gathered output; others: the input)."""
    if elem is None or in_nelems < 0:
        return None
    n = out_nelems if op == "all_gather" and out_nelems >= 0 else in_nelems
    return int(n) * elem


def _side_index(table_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Position of each event row in a side table keyed by ascending row, -1 where absent."""
    if len(table_rows) == 0:
        return np.full(len(rows), -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(table_rows, rows), len(table_rows) - 1)
    return np.where(table_rows[pos] == rows, pos, -1)


def _gpu_instances(ctx: Context, ctx_group_sizes: dict) -> tuple[np.ndarray, list[str], list[str], list]:
    t = ctx.trace
    rows = ctx.class_rows("communication")
    rows = rows[t.kind[rows] == Kind.KERNEL]
    rows = rows[np.argsort(t.ts_us[rows], kind="stable")]
    side = _side_index(t.collectives.row, rows)
    ops, groups, sizes = [], [], []
    for row, name, pos in zip(rows.tolist(), t.names_of(rows), side.tolist()):
        if pos >= 0:
            c = t.collectives
            op = canonical_op(c.name[pos] or name)
            groups.append(c.process_group[pos] or "default")
            if c.group_size[pos] > 0:
                ctx_group_sizes[groups[-1]] = int(c.group_size[pos])
            sizes.append(message_bytes(op, int(c.in_nelems[pos]), int(c.out_nelems[pos]), dtype_bytes(c.dtype[pos])))
        else:
            op = canonical_op(name)
            groups.append("default")
            sizes.append(None)
        ops.append(op)
    return rows, ops, groups, sizes


def _gloo_instances(ctx: Context) -> tuple[list[str], list[str], list, list[float], list[float]]:
    """gloo runs a collective on a worker thread (`gloo:<op>`) after the rank's main thread
    issued it (`c10d::<op>_`): the rank arrived when it issued the call (a worker busy with
    the previous collective delays the annotation, not the rank), and the collective ended
    with the annotation. The k-th call of an op pairs with the k-th annotation of that op."""
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
    items = []
    for op, rows in work.items():
        issued = calls.get(op, [])
        for k, row in enumerate(rows):
            call = issued[k] if k < len(issued) else None
            start = float(t.ts_us[call]) if call is not None else float(t.ts_us[row])
            size = _first_input_bytes(t, call) if call is not None else None
            items.append((start, op, size, float(t.end_us[row])))
    items.sort(key=lambda x: x[0])
    return ([i[1] for i in items], ["default"] * len(items), [i[2] for i in items],
            [i[0] for i in items], [i[3] for i in items])


def _first_input_bytes(t, row: int) -> int | None:
    dims_id, types_id = int(t.dims_id[row]), int(t.types_id[row])
    if dims_id < 0 or types_id < 0:
        return None
    dims, types = t.arg_values[dims_id], t.arg_values[types_id]
    # c10d ops take a list of tensors first: dims [[[n, m]], ...], types ["GenericList[Tensor]", ...]
    shape = dims[0] if dims else None
    while isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) for d in shape):
        return None
    dtype = types[0] if types else None
    m = re.search(r"\[(\w+)\]|^(\w+)$", dtype) if isinstance(dtype, str) else None
    elem = dtype_bytes(next((g for g in m.groups() if g), None)) if m else None
    elem = elem if elem is not None else 4  # gloo traces name the list type only; fp32 is the norm
    return int(np.prod(shape, dtype=np.int64)) * elem


def rank_collectives(ctx: Context) -> dict | None:
    """The `collectives` block of one rank's analysis record, or None without collectives."""
    t = ctx.trace
    group_sizes: dict[str, int] = {}
    rows, ops, groups, sizes = _gpu_instances(ctx, group_sizes)
    source = "nccl"
    starts, ends = t.ts_us[rows].tolist(), t.end_us[rows].tolist()
    if not len(rows):
        ops, groups, sizes, starts, ends = _gloo_instances(ctx)
        source = "gloo"
    if not ops:
        return None
    seq, counter = [], {}
    for op, g in zip(ops, groups):
        k = counter.get((g, op), 0)
        counter[(g, op)] = k + 1
        seq.append(k)
    n = min(len(ops), MAX_INSTANCES)
    overlap = (_gpu_overlap_pct(ctx, rows[:n]) if source == "nccl"
               else _overlap_pct(*_cpu_compute(ctx), starts[:n], ends[:n]))
    steps = ctx.steps
    return {
        "schema": SCHEMA,
        "source": source,
        "count": len(ops),
        "kept": n,
        "seq_from": "order",
        # ranks per process group as recorded ("Group size"); the default group: world size
        "group_size": group_sizes or ({"default": t.world_size} if t.world_size else {}),
        "op": ops[:n],
        "group": groups[:n],
        "seq": seq[:n],
        "bytes": sizes[:n],
        "start_us": [round(x, 3) for x in starts[:n]],
        "end_us": [round(x, 3) for x in ends[:n]],
        "compute_overlap_pct": overlap,
        # Host-side step entries, for lateness across ranks (analysis/lateness.py).
        "step_number": [] if steps.pseudo else [int(x) for x in steps.number],
        "step_cpu_start_us": [] if steps.pseudo else [round(float(x), 3) for x in steps.cpu_start_us],
    }


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
    workers, without the collective calls and waits themselves."""
    t = ctx.trace
    ops = np.flatnonzero(t.kind == Kind.CPU_OP)
    comm_ids = [i for i, n in enumerate(t.names) if _COMM_CALL.search(n)]
    gloo_ids = [i for i, n in enumerate(t.names) if n.startswith("gloo:")]
    workers = np.unique(t.tid[np.isin(t.name_id, gloo_ids)]) if gloo_ids else np.zeros(0, t.tid.dtype)
    keep = ops[~np.isin(t.name_id[ops], comm_ids) & ~np.isin(t.tid[ops], workers)]
    return t.ts_us[keep], t.end_us[keep]
