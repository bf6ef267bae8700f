"""Top-K operators and kernels.

* Operators are *leaf* aten ops: each GPU activity is billed to the innermost cpu_op on the
  thread that launched it (trace/links.py), so `aten::linear` is not double-counted with
  the `aten::addmm` under it. GPU time = sum of the op's activity durations.
* CPU-only traces have no GPU time: operators are ranked by *self* CPU time (duration
  minus the time of the cpu_ops directly inside it), the profiler's "Self CPU" column.
* Kernels are grouped by name.

Shares are of the summed durations of the ranked population (GPU activity, or cpu_op self
time), so they add up to 100% over all groups.
"""

from __future__ import annotations

import numpy as np

from trainprof.analysis.timeline.context import Context
from trainprof.recordtypes.timeline import ClassRow, KernelClasses, KernelRow, OpRow
from trainprof.trace import Kind
from trainprof.trace.ids import distinct


def _group(keys: np.ndarray, values: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    return (np.bincount(keys, minlength=n_keys).astype(np.int64),
            np.bincount(keys, weights=values, minlength=n_keys))


def top_kernels(ctx: Context, k: int = 10) -> list[KernelRow]:
    t = ctx.trace
    rows = ctx.work
    if not len(rows):
        return []
    count, total = _group(t.name_id[rows], t.dur_us[rows], len(t.names))
    grand = float(total.sum())
    # one representative row per name, for its class and Tensor Core flag
    rep = np.full(len(t.names), -1, dtype=np.int64)
    rep[t.name_id[rows][::-1]] = rows[::-1]
    out = []
    for nid in np.argsort(-total, kind="stable")[:k]:
        if count[nid] == 0:
            break
        r = int(rep[nid])
        out.append(KernelRow(
            name=t.names[nid], kind=ctx.class_name(r),
            tensor_core=bool(ctx.classes.tensor_core[r]),
            count=int(count[nid]), total_us=float(total[nid]),
            mean_us=float(total[nid] / count[nid]),
            share_pct=100.0 * float(total[nid]) / grand if grand > 0 else 0.0,
        ))
    return out


def self_cpu_us(ctx: Context) -> np.ndarray:
    """Row-aligned self time of cpu_op rows (0 elsewhere)."""
    t = ctx.trace
    ops = t.rows(Kind.CPU_OP)
    self_t = np.zeros(len(t))
    self_t[ops] = t.dur_us[ops]
    par = ctx.links.op_parent[ops]
    has = par >= 0
    np.subtract.at(self_t, par[has], t.dur_us[ops[has]])
    return np.maximum(self_t, 0.0)


def top_ops(ctx: Context, k: int = 10) -> list[OpRow]:
    """The top-k operators by GPU time (on a CPU-only trace: by self CPU time); `roofline`
    is left for analysis/cost/roofline_top.py to fill."""
    t = ctx.trace
    if ctx.has_gpu:
        rows = ctx.work
        op = ctx.links.op[rows]
        keep = op >= 0
        rows, op = rows[keep], op[keep]
        if not len(rows):
            return []
        op_name = t.name_id[op]
        _, total = _group(op_name, t.dur_us[rows], len(t.names))
        kernels = np.bincount(op_name, minlength=len(t.names))
        # calls = distinct op rows per name
        uniq_ops = distinct(op, len(t))
        calls = np.bincount(t.name_id[uniq_ops], minlength=len(t.names))
        grand = float(t.dur_us[ctx.work].sum())
        metric = "gpu"
    else:
        ops = t.rows(Kind.CPU_OP)
        if not len(ops):
            return []
        st = self_cpu_us(ctx)
        calls, total = _group(t.name_id[ops], st[ops], len(t.names))
        kernels = np.zeros(len(t.names), dtype=np.int64)
        grand = float(st[ops].sum())
        metric = "self_cpu"
    out = []
    for nid in np.argsort(-total, kind="stable")[:k]:
        if total[nid] <= 0:
            break
        out.append(OpRow(
            name=t.names[nid], metric=metric, calls=int(calls[nid]),
            kernels=int(kernels[nid]), total_us=float(total[nid]),
            mean_us=float(total[nid] / max(1, calls[nid])),
            share_pct=100.0 * float(total[nid]) / grand if grand > 0 else 0.0,
        ))
    return out


def class_breakdown(ctx: Context) -> KernelClasses:
    """Time per kernel class and the Tensor Core share of compute-kernel time."""
    t = ctx.trace
    rows = ctx.work
    names = ctx.classes.names
    cid = ctx.classes.class_id[rows]
    total = np.bincount(cid, weights=t.dur_us[rows], minlength=len(names)) if len(rows) else np.zeros(len(names))
    grand = float(total.sum())
    comp = ctx.compute
    comp_t = float(t.dur_us[comp].sum())
    tc_t = float(t.dur_us[comp[ctx.classes.tensor_core[comp]]].sum())
    mm_ids = [names.index(n) for n in ("gemm", "convolution", "attention") if n in names]
    mm = comp[np.isin(ctx.classes.class_id[comp], mm_ids)]
    return KernelClasses(
        matmul_us=float(t.dur_us[mm].sum()),  # GEMM + convolution + attention kernels
        matmul_tensor_core_us=float(t.dur_us[mm[ctx.classes.tensor_core[mm]]].sum()),
        classes=[ClassRow(kind=n, total_us=float(total[i]),
                          share_pct=100.0 * float(total[i]) / grand if grand > 0 else 0.0)
                 for i, n in enumerate(names) if total[i] > 0],
        tensor_core_us=tc_t,
        tensor_core_pct=100.0 * tc_t / comp_t if comp_t > 0 else None,
    )
