"""Forward and backward time per nn.Module, gathered per module type.

Input: the per-module ranges a trace holds (`nn.Module: <Class>_<n>`, from trainprof's
record_function ranges or torch's with_modules frames; trace/kinds.MODULE_PREFIX).

* Forward, host time (CPU traces): a range's self time = its duration − its child module
  ranges' durations (same thread; trace/nesting.py).
* Forward, device time (GPU traces): each kernel/memcpy/memset counts for the innermost
  module range around its launch (trace/links.py); host ranges of asynchronous launches
  would measure the launch, not the work.
* Backward: Kineto links each forward op that recorded an autograd node to that node's
  `autograd::engine::evaluate_function: …` range with a `fwdbwd` flow (the node's sequence
  number). A node's time (host duration, or its launched device work) counts for the
  innermost module around its forward op. Nodes without a forward op in a module
  (AccumulateGrad, the loss) stay unattributed: `backward_linked_pct` says how much.
* Inclusive times add each range's self time up its chain of parent modules.

Rows rank by self time (forward + backward outside child modules), so a slow leaf is named
ahead of the Block that contains it; self times partition the outermost modules' time, and
the shares sum to 100. FLOPs: the priced ops (analysis/cost/roofline.priced_rows) by the
same attribution; MFU = FLOPs / self time / the dense peak of the row's dominant dtype.

Limits: activation checkpointing re-runs forwards inside backward nodes (counted as forward
of the module, and the node as backward: both are real time); a module called from several
threads is read per thread; a recursive type (a Block inside a Block) adds its inclusive
times once per range.
"""

from __future__ import annotations

import re

import numpy as np

from trainprof.analysis.cost.op_cost import op_cost
from trainprof.analysis.cost.roofline import Roof, priced_rows
from trainprof.analysis.timeline.context import Context
from trainprof.recordtypes.modules import ModuleRow, ModuleTable
from trainprof.trace import Kind
from trainprof.trace.kinds import MODULE_PREFIX
from trainprof.trace.nesting import group_ids, innermost_containing, nest_order, parents

NODE_PREFIX = "autograd::engine::evaluate_function: "
_INSTANCE = re.compile(r"_\d+$")


def module_type(label: str) -> str:
    """`Block_3` → `Block` (the instance number is first-call order, per class)."""
    return _INSTANCE.sub("", label)


def module_times(ctx: Context, roof: Roof | None = None, pattern=None) -> ModuleTable | None:  # noqa: ANN001
    """The per-type table, or None when the trace has no module ranges. `pattern`: a
    compiled pattern (userregex) limiting the rows listed; shares stay of the whole table."""
    t = ctx.trace
    cand = t.rows(Kind.USER_ANNOTATION, Kind.PYTHON_FUNCTION)
    ids = [i for i, n in enumerate(t.names) if n.startswith(MODULE_PREFIX)]
    mods = cand[np.isin(t.name_id[cand], ids)]
    if not len(mods):
        return None
    labels = [s[len(MODULE_PREFIX):] for s in t.names_of(mods)]
    source = "with_modules" if (t.kind[mods] == Kind.PYTHON_FUNCTION).all() else "trainprof ranges"
    g_mod = group_ids(t.pid[mods], t.tid[mods])
    order = nest_order(g_mod, t.ts_us[mods], t.end_us[mods])
    par = parents(g_mod, t.ts_us[mods], t.end_us[mods], order)
    nodes = _backward_nodes(ctx)
    fwd_self, node_time = _self_times(ctx, mods, par, nodes)
    # backward: node -> its forward op's point (fwdbwd flow) -> innermost module there
    node_mod = _node_modules(ctx, nodes, mods)
    linked = node_mod >= 0
    bwd_self = np.zeros(len(mods))
    np.add.at(bwd_self, node_mod[linked], node_time[linked])
    node_total = float(node_time.sum())
    flops, dtype_flops = _flops(ctx, mods, nodes, node_mod)
    fwd_inc, bwd_inc = fwd_self.copy(), bwd_self.copy()
    for i in order[::-1].tolist():  # children come after their parents in nest order
        p = par[i]
        if p >= 0:
            fwd_inc[p] += fwd_inc[i]
            bwd_inc[p] += bwd_inc[i]
    steps = 1 if ctx.steps.pseudo else max(1, len(ctx.steps))
    total_self = float((fwd_self + bwd_self).sum())
    rows = _rows([module_type(x) for x in labels], labels, fwd_inc, bwd_inc, fwd_self + bwd_self, flops, dtype_flops,
                 steps, total_self, roof, pattern)
    # self times partition the outermost modules' time: the shares add up
    assert not rows or pattern is not None or abs(sum(r.share_pct for r in rows) - 100.0) < 0.05 * len(rows) + 0.01
    return ModuleTable(
        source=source, time="device" if ctx.has_gpu else "host", steps=steps,
        total_self_us=round(total_self / steps, 3),
        backward_linked_pct=round(100.0 * float(node_time[linked].sum()) / node_total, 1) if node_total > 0 else None,
        rows=rows, pattern=pattern.pattern if pattern is not None else None,
    )


def _contain(t, q_rows_pid, q_tid, q_ts, rows: np.ndarray) -> np.ndarray:  # noqa: ANN001
    """Innermost of `rows` (intervals on one thread) around each query point (pid, tid, ts), or -1."""
    g = group_ids(np.concatenate([t.pid[rows], q_rows_pid]), np.concatenate([t.tid[rows], q_tid]))
    return innermost_containing(g[: len(rows)], t.ts_us[rows], t.end_us[rows], g[len(rows):], q_ts)


def _at_rows(t, q: np.ndarray, rows: np.ndarray) -> np.ndarray:  # noqa: ANN001
    return _contain(t, t.pid[q], t.tid[q], t.ts_us[q], rows)


def _self_times(ctx: Context, mods: np.ndarray, par: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Forward self time per module range and time per backward node: host durations on a
    CPU trace; on a GPU trace the device time of the work each launched."""
    t = ctx.trace
    fwd_self = np.zeros(len(mods))
    if not ctx.has_gpu:
        fwd_self += t.dur_us[mods]
        np.subtract.at(fwd_self, par[par >= 0], t.dur_us[mods][par >= 0])
        return fwd_self, t.dur_us[nodes].astype(float)
    work = ctx.work
    launch = ctx.links.launch[work]
    work, launch = work[launch >= 0], launch[launch >= 0]
    m = _at_rows(t, launch, mods)
    np.add.at(fwd_self, m[m >= 0], t.dur_us[work[m >= 0]])
    node_time = np.zeros(len(nodes))
    if len(nodes):
        k = _at_rows(t, launch, nodes)
        np.add.at(node_time, k[k >= 0], t.dur_us[work[k >= 0]])
    return fwd_self, node_time


def _flops(ctx: Context, mods: np.ndarray, nodes: np.ndarray, node_mod: np.ndarray):  # noqa: ANN202
    """FLOPs per module range: priced ops in a backward node count for that node's module,
    else for the innermost module around them; with the FLOPs per math dtype."""
    t = ctx.trace
    flops = np.zeros(len(mods))
    dtype_flops: list[dict[str, float]] = [{} for _ in range(len(mods))]
    priced = priced_rows(ctx)
    if not len(priced):
        return flops, dtype_flops
    at = _at_rows(t, priced, mods)
    if len(nodes):
        in_node = _at_rows(t, priced, nodes)
        at = np.where(in_node >= 0, node_mod[np.maximum(in_node, 0)], at)
    for row, mi in zip(priced.tolist(), at.tolist()):
        if mi < 0:
            continue
        c = op_cost(t.name(row), t.arg(t.dims_id, row), t.arg(t.types_id, row), t.arg(t.concrete_id, row))
        if c is None:
            continue
        flops[mi] += c.flops
        d = dtype_flops[mi]
        d[c.dtype or "fp32"] = d.get(c.dtype or "fp32", 0.0) + c.flops
    return flops, dtype_flops


def _backward_nodes(ctx: Context) -> np.ndarray:
    t = ctx.trace
    ops = t.rows(Kind.CPU_OP)
    ids = [i for i, n in enumerate(t.names) if n.startswith(NODE_PREFIX)]
    return ops[np.isin(t.name_id[ops], ids)]


def _node_modules(ctx: Context, nodes: np.ndarray, mods: np.ndarray) -> np.ndarray:
    """Per backward node, the index (into mods) of the module around its forward op, or -1."""
    t, f = ctx.trace, ctx.trace.flows
    out = np.full(len(nodes), -1, dtype=np.int64)
    cat = [i for i, c in enumerate(t.categories) if c == "fwdbwd"]
    if not len(nodes) or not len(f) or not cat:
        return out
    sel = np.flatnonzero(np.isin(f.cat_id, cat))
    start = sel[f.phase[sel] == 0]
    finish = sel[f.phase[sel] == 2]
    # one flow id per node (its sequence number); first start and first finish of each id
    s_id, s_first = np.unique(f.id[start], return_index=True)
    f_id, f_first = np.unique(f.id[finish], return_index=True)
    common, si, fi = np.intersect1d(s_id, f_id, return_indices=True)
    if not len(common):
        return out
    s_rows, f_rows = start[s_first[si]], finish[f_first[fi]]
    node = _contain(t, f.pid[f_rows], f.tid[f_rows], f.ts_us[f_rows], nodes)
    mod = _contain(t, f.pid[s_rows], f.tid[s_rows], f.ts_us[s_rows], mods)
    ok = node >= 0
    out[node[ok]] = mod[ok]
    return out


def _rows(types, labels, fwd_inc, bwd_inc, self_us, flops, dtype_flops, steps, total_self, roof, pattern):  # noqa: ANN001
    by: dict[str, list[int]] = {}
    for i, ty in enumerate(types):
        by.setdefault(ty, []).append(i)
    rows = []
    for ty, idx in by.items():
        if pattern is not None and not any(pattern.search(x) for x in (ty, *(labels[i] for i in idx))):
            continue
        s = float(self_us[idx].sum())
        fl = float(flops[idx].sum())
        dt: dict[str, float] = {}
        for i in idx:
            for k, v in dtype_flops[i].items():
                dt[k] = dt.get(k, 0.0) + v
        tflops = fl / (s * 1e-6) / 1e12 if fl > 0 and s > 0 else None
        mfu = None
        if tflops is not None and roof is not None and dt:
            peak, _ = roof.peak(max(dt, key=dt.get))
            mfu = round(100.0 * tflops / peak, 2) if peak else None
        rows.append(ModuleRow(
            module=ty, instances=len({labels[i] for i in idx}), calls_per_step=round(len(idx) / steps, 2),
            forward_us=round(float(fwd_inc[idx].sum()) / steps, 3), backward_us=round(float(bwd_inc[idx].sum()) / steps, 3),
            self_us=round(s / steps, 3), share_pct=round(100.0 * s / total_self, 2) if total_self > 0 else 0.0,
            flops=fl / steps if fl > 0 else None, tflops=round(tflops, 4) if tflops is not None else None, mfu_pct=mfu,
        ))
    rows.sort(key=lambda r: -r.self_us)
    return rows


def only_modules(table: ModuleTable | None, pattern) -> ModuleTable | None:  # noqa: ANN001
    """`analyze --modules PATTERN`: the table's rows whose type the pattern matches (RE2
    search); shares stay of the whole table, so a row reads the same with or without it."""
    if table is None:
        return None
    import msgspec

    return msgspec.structs.replace(table, rows=[r for r in table.rows if pattern.search(r.module)],
                                   pattern=pattern.pattern)
