"""The top operators on the roofline: each row of the top-operators table (analysis/timeline/ops.py)
priced over all its calls, so a report's roofline section shows the same operators with the
same times as its top-5 table (issue #32: the roofline plotted other operators than the top-5
table, grouped by shape, and one op read 613.90 ms in one table and 732.29 ms in the other).

For an operator row of time T (its `total_us`: its kernels' GPU time, or on a CPU-only trace
its self CPU time), over its calls that have a cost formula (op_cost.py) and no op of the
same family beneath them (roofline.priced_rows; on a GPU trace, the calls that ran kernels):

    FLOPs = Σ FLOPs per call        bytes = Σ bytes per call (minimum traffic)
    intensity = FLOPs / bytes       achieved = FLOPs / T
    attainable = min(peak[dtype], intensity × bandwidth)
    bound: latency below LATENCY_PCT of attainable, else compute at or above the ridge
           (peak / bandwidth), else memory (as roofline.roofline_points)

Calls without a formula or shapes add time but no FLOPs: `calls_priced` < `calls` (the row's
own count) says so, and the achieved rate is then a lower bound. Cost: 5-15 ms on the
shipped traces of 12k-123k events (medians of 7), about twice roofline_points, whose call
chains it walks again. The by-shape points (`roofline_points`) stay in
analysis.json for the per-shape detail.
"""

from __future__ import annotations

import numpy as np

from trainprof.analysis.timeline.context import Context
from trainprof.analysis.cost.conv_cost import FORWARD_ARGS
from trainprof.analysis.cost.op_cost import op_cost
from trainprof.analysis.cost.roofline import (Roof, _above_roof_note, _conv_outputs, _device_time, _dims_key,
                                         _has_conv_args, priced_rows)
from trainprof.recordtypes.roofline import OpRoofline
from trainprof.recordtypes.timeline import OpRow
from trainprof.trace.nesting import group_ids

TOP_K = 10  # rows priced: the reports show five, `analyze --top` more; a study's diff asks for every op
LATENCY_PCT = 10.0  # as roofline_points: far below both roofs, launch or per-call overhead dominates


def top_ops_roofline(ctx: Context, roof: Roof, top_ops: list[OpRow], k: int = TOP_K) -> list[OpRoofline]:
    """The roofline block of each of the first `k` top-operator rows (same order)."""
    t = ctx.trace
    rows = priced_rows(ctx)
    dev_us, tc = _device_time(ctx, rows)
    if ctx.has_gpu:  # the calls whose kernels make up the row's time
        keep = dev_us > 0
        rows, tc = rows[keep], tc[keep]
    names = t.name_id[rows]
    conv_out: dict | None = None
    out = []
    for op in top_ops[:k]:
        nid = t.names.index(op.name) if op.name in t.names else -1
        sel = names == nid
        mine, uses_tc = rows[sel], bool(tc[sel].any())
        flops = nbytes = 0.0
        priced, by_dtype, notes = 0, {}, set()
        if len(mine):
            gid = group_ids(t.dims_id[mine], t.types_id[mine])
            first = np.full(int(gid.max()) + 1, len(mine))
            np.minimum.at(first, gid, np.arange(len(mine)))
            for g, n in enumerate(np.bincount(gid).tolist()):
                r = int(mine[first[g]])
                dims, types, concrete = t.arg(t.dims_id, r), t.arg(t.types_id, r), t.arg(t.concrete_id, r)
                out_dims = None
                if op.name in FORWARD_ARGS and not _has_conv_args(concrete):
                    conv_out = _conv_outputs(ctx) if conv_out is None else conv_out
                    out_dims = conv_out.get(_dims_key(dims))
                cost = op_cost(op.name, dims, types, concrete, out_dims)
                if cost is None or cost.bytes <= 0:
                    continue
                flops += cost.flops * n
                nbytes += cost.bytes * n
                priced += n
                by_dtype[cost.dtype] = by_dtype.get(cost.dtype, 0.0) + cost.flops * n
                if cost.estimated and cost.assumption:
                    notes.add(cost.assumption)
        p = _point(roof, op, flops, nbytes, priced, int(op.calls or 0), by_dtype, uses_tc, notes)
        if (p["roofline_pct"] or 0) > 100.0:  # above its roof: say why, never a silent 119%
            p["note"] = _above_roof_note(ctx, int(mine[0]), p["dtype"], bool(notes), p["note"])
        out.append(OpRoofline(**p))
    return out


def _point(roof: Roof, op: OpRow, flops: float, nbytes: float, priced: int, calls: int, by_dtype: dict,
           uses_tc: bool, notes: set) -> dict:
    base = {"calls": calls, "calls_priced": priced}
    if not priced:
        return {**base, "flops": None, "bytes": None, "intensity": None, "achieved_tflops": None,
                "attainable_tflops": None, "roofline_pct": None, "bound": None, "dtype": None,
                "note": "no FLOP formula or no recorded shapes for this operator (analysis/cost/op_cost.py)"}
    dtype = max(by_dtype, key=by_dtype.get) if flops > 0 else next(iter(by_dtype))
    peak, peak_dtype = roof.peak(dtype, uses_tc)
    time_s = op.total_us * 1e-6
    achieved = flops / time_s / 1e12 if time_s > 0 else None
    p = {**base, "flops": flops, "bytes": nbytes, "intensity": flops / nbytes, "achieved_tflops": achieved,
         "attainable_tflops": None, "roofline_pct": None, "bound": None, "dtype": peak_dtype,
         "tensor_core": uses_tc, "note": "; ".join(sorted(notes)) or None}
    if priced < calls:
        p["note"] = "; ".join(x for x in (p["note"], f"FLOPs of {priced} of {calls} calls (the rest have no "
                                          "formula or shapes): the achieved rate is a lower bound") if x)
    if achieved is None:
        return p
    if flops == 0 and roof.bandwidth_gbs:  # pure data movement: only the bandwidth roof applies
        pct = 100.0 * nbytes / time_s / 1e9 / roof.bandwidth_gbs
        p.update(attainable_tflops=0.0, roofline_pct=pct, bound="latency" if pct < LATENCY_PCT else "memory")
    elif peak is not None and roof.bandwidth_gbs:
        attainable = min(peak, p["intensity"] * roof.bandwidth_gbs / 1e3)
        pct = 100.0 * achieved / attainable if attainable > 0 else None
        p.update(attainable_tflops=attainable, roofline_pct=pct,
                 bound="latency" if pct is not None and pct < LATENCY_PCT
                 else "compute" if p["intensity"] >= peak * 1e3 / roof.bandwidth_gbs else "memory")
    return p
