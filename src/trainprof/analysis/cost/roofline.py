"""Roofline of the top operators from a trace's shapes (Williams, Waterman, Patterson 2009).

For each group of calls with the same (op, input dims, input types), using the per-call
FLOPs and bytes of op_cost.py and the device time the trace measured:

    intensity  = FLOPs / bytes                               (FLOP/byte)
    attainable = min(peak[dtype], intensity × bandwidth)     (TFLOP/s)
    achieved   = FLOPs · calls / device time                 (TFLOP/s)
    roofline_pct = 100 · achieved / attainable   (for 0-FLOP ops, copies and casts:
                   100 · achieved bytes/s / bandwidth)
    bound = "latency" if roofline_pct < latency_pct (far below both roofs: launch- or
            occupancy-limited), else "compute" if intensity ≥ ridge (= peak / bandwidth),
            else "memory".

Device time: on a GPU trace, the durations of the kernels billed to the call (trace
links); on a CPU-only trace, the op's own duration. Only the innermost priced op of a call
chain *of one family* is counted (aten::addmm, not the aten::linear around it; but both
aten::addmm and the aten::copy_ it calls to broadcast the bias), so FLOPs are not doubled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainprof.analysis.timeline.context import Context
from trainprof.analysis.cost.conv_cost import FORWARD_ARGS
from trainprof.analysis.cost.op_cost import OPS, family, op_cost
from trainprof.recordtypes.roofline import RooflineHeader, RooflinePoint
from trainprof.trace import Kind
from trainprof.trace.classify import tokens
from trainprof.trace.ids import distinct
from trainprof.trace.nesting import group_ids
from trainprof.vocab.matmul import MATMUL_OPS

# Backward ops whose grad_output is the forward's output: (op, position of grad_output, of
# input, of weight among the tensor arguments).
_CONV_BWD = {"aten::convolution_backward": (0, 1, 2), "aten::cudnn_convolution_backward": (1, 0, 2),
             "aten::mkldnn_convolution_backward": (1, 0, 2), "aten::miopen_convolution_backward": (1, 0, 2)}


@dataclass(frozen=True)
class Roof:
    """The machine: dense peak TFLOP/s per dtype and memory bandwidth."""

    peak_tflops: dict[str, float]
    bandwidth_gbs: float | None
    source: str  # "datasheet:<row>" (+ " (assumed from <arch>)"), "user", "measured on this machine", "ncu"
    device: str | None = None
    # why the roofs are unknown and which --gpu-spec keys to try (jobs/analyze.resolve_roof);
    # for a row assumed from the architecture alone, which row and why
    hint: str | None = None

    def peak(self, dtype: str | None, tensor_core: bool = False) -> tuple[float | None, str | None]:
        if dtype == "fp32" and tensor_core and "tf32" in self.peak_tflops:
            return self.peak_tflops["tf32"], "tf32"
        if dtype in self.peak_tflops:
            return self.peak_tflops[dtype], dtype
        if dtype is None and self.peak_tflops:  # unknown math dtype: the fp32 roof is the honest one
            key = "fp32" if "fp32" in self.peak_tflops else next(iter(self.peak_tflops))
            return self.peak_tflops[key], key
        return None, dtype


def priced_rows(ctx: Context) -> np.ndarray:
    """cpu_op rows with a cost formula and no op of the same family beneath them
    (op_cost.family): aten::addmm, not the aten::linear around it."""
    t = ctx.trace
    ops = t.rows(Kind.CPU_OP)
    priced_names = np.array([n in OPS for n in t.names], dtype=bool)
    fam_of_name = np.array([hash(family(n)) if n in OPS else 0 for n in t.names], dtype=np.int64)
    cand = ops[priced_names[t.name_id[ops]]]
    fam = fam_of_name[t.name_id[cand]]
    shadowed = np.zeros(len(t), dtype=bool)
    par = ctx.links.op_parent[cand]
    for _ in range(64):  # walk up the call chains (depth is small: ~10)
        live = par >= 0
        par, fam = par[live], fam[live]
        if not len(par):
            break
        same = fam_of_name[t.name_id[par]] == fam
        shadowed[par[same]] = True
        par = ctx.links.op_parent[par]
    return cand[~shadowed[cand]]


def _device_time(ctx: Context, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: device µs and whether any of its kernels used Tensor Cores."""
    t = ctx.trace
    if not ctx.has_gpu:
        return t.dur_us[rows].astype(float), np.zeros(len(rows), dtype=bool)
    work = ctx.work
    op = ctx.links.op[work]
    keep = op >= 0
    dev = np.zeros(len(t))
    np.add.at(dev, op[keep], t.dur_us[work[keep]])
    tc = np.zeros(len(t), dtype=bool)
    tc_rows = work[keep & ctx.classes.tensor_core[work]]
    tc[ctx.links.op[tc_rows]] = True
    return dev[rows], tc[rows]


def _ranked_groups(t, rows: np.ndarray, dev_us: np.ndarray, tc: np.ndarray):
    """(first row, calls, device µs, any Tensor Core) per (op, dims, types) group of the rows
    with device time, by time descending, ties in order of first call. Array ops, not a dict
    filled row by row (~4× faster; docs/benchmarks.md, "Timings in docstrings"); the sums add
    each group's times in row order, as the loop did."""
    keep = np.flatnonzero(~(dev_us <= 0))
    if not len(keep):
        return
    r, d = rows[keep], dev_us[keep]
    gid = group_ids(t.name_id[r], t.dims_id[r], t.types_id[r])
    first = np.full(int(gid.max()) + 1, len(r))
    np.minimum.at(first, gid, np.arange(len(r)))
    count = np.bincount(gid)
    total = np.bincount(gid, weights=d)
    any_tc = np.bincount(gid, weights=tc[keep]) > 0
    for g in np.lexsort((first, -total)).tolist():
        yield int(r[first[g]]), int(count[g]), float(total[g]), bool(any_tc[g])


def roofline_points(ctx: Context, roof: Roof, *, top_k: int = 10, latency_pct: float = 10.0) -> list[RooflinePoint]:
    t = ctx.trace
    rows = priced_rows(ctx)
    dev_us, tc = _device_time(ctx, rows)
    conv_out = None
    out = []
    for r, count, dev, uses_tc in _ranked_groups(t, rows, dev_us, tc):
        if len(out) >= top_k:
            break
        name = t.name(r)
        dims, types = t.arg(t.dims_id, r), t.arg(t.types_id, r)
        concrete = t.arg(t.concrete_id, r)
        out_dims = None
        if name in FORWARD_ARGS and not _has_conv_args(concrete):
            conv_out = _conv_outputs(ctx) if conv_out is None else conv_out
            out_dims = conv_out.get(_dims_key(dims))
        cost = op_cost(name, dims, types, concrete, out_dims)
        if cost is None or cost.bytes <= 0:
            continue
        peak, peak_dtype = roof.peak(cost.dtype, uses_tc)
        intensity = cost.flops / cost.bytes
        achieved = cost.flops * count / (dev * 1e-6) / 1e12
        achieved_gbs = cost.bytes * count / (dev * 1e-6) / 1e9
        attainable = pct = bound = None
        if cost.flops == 0 and roof.bandwidth_gbs:
            # Pure data movement (copies, casts, gathers): only the bandwidth roof applies.
            attainable, pct = 0.0, 100.0 * achieved_gbs / roof.bandwidth_gbs
            bound = "latency" if pct < latency_pct else "memory"
        elif peak is not None and roof.bandwidth_gbs:
            attainable = min(peak, intensity * roof.bandwidth_gbs / 1e3)
            ridge = peak * 1e3 / roof.bandwidth_gbs
            pct = 100.0 * achieved / attainable if attainable > 0 else None
            bound = ("latency" if pct is not None and pct < latency_pct
                     else "compute" if intensity >= ridge else "memory")
        note = cost.assumption
        if out_dims is not None:
            note = "stride/padding not recorded: output shape taken from the matching convolution_backward"
        if pct is not None and pct > 100.0:
            note = _above_roof_note(ctx, r, peak_dtype, cost.estimated, note)
        out.append(RooflinePoint(
            name=name, input_dims=_plain(dims), input_types=_plain(types), count=count,
            device_time_us=dev, flops=cost.flops, bytes=cost.bytes, intensity=intensity,
            dtype=peak_dtype, tensor_core=uses_tc, achieved_tflops=achieved,
            attainable_tflops=attainable, roofline_pct=pct, bound=bound, achieved_gbs=achieved_gbs,
            kind=ctx.class_name(_main_kernel(ctx, r)) if ctx.has_gpu else _cpu_class(name),
            estimated=cost.estimated, note=note))
    return out


def _above_roof_note(ctx: Context, op_row: int, dtype: str | None, estimated: bool, note: str | None) -> str:
    """Why a point sits above its roof: it must say, never show a silent 119%."""
    if ctx.has_gpu:
        hits = ctx.work[ctx.links.op[ctx.work] == op_row]
        names = [tokens(ctx.trace.names[i]) for i in distinct(ctx.trace.name_id[hits], len(ctx.trace.names))]
        if any("winograd" in n or " fft" in n or n.startswith("fft") for n in names):
            return ("above the roof: cuDNN ran a Winograd/FFT algorithm, which does fewer multiplications "
                    "than the direct-convolution count used here (Winograd F(4x4,3x3) ~4x fewer)")
    if estimated:
        return f"above the roof: the FLOP count is an estimate ({note})"
    return (f"above the roof: the {dtype} peak may not be this device's (check --gpu-spec), "
            "or the FLOP count overstates the work the kernels did")


def _has_conv_args(concrete) -> bool:
    return bool(concrete) and any(str(c) not in ("", "None") and "[" in str(c) for c in concrete)


def _dims_key(dims) -> tuple:
    ts = [tuple(d) for d in (dims or []) if isinstance(d, (list, tuple)) and d and all(isinstance(x, int) for x in d)]
    return tuple(ts[:2])


def _conv_outputs(ctx: Context) -> dict[tuple, tuple]:
    """(input dims, weight dims) -> forward output dims, read off the convolution backward
    ops of the same trace (their grad_output has the forward output's shape). Keys that map
    to two different outputs (same shapes, different strides) are dropped: no guess."""
    t = ctx.trace
    found: dict[tuple, set] = {}
    ids = {t.names.index(n): pos for n, pos in _CONV_BWD.items() if n in t.names}
    if not ids:
        return {}
    ops = t.rows(Kind.CPU_OP)
    for r in ops[np.isin(t.name_id[ops], list(ids))]:
        i_go, i_x, i_w = ids[int(t.name_id[r])]
        ts = [tuple(d) for d in (t.arg(t.dims_id, r) or []) if isinstance(d, (list, tuple)) and d]
        if len(ts) < 3:
            continue
        found.setdefault((ts[i_x], ts[i_w]), set()).add(ts[i_go])
    return {k: next(iter(v)) for k, v in found.items() if len(v) == 1}


def roofline_header(roof: Roof, dtype: str | None) -> RooflineHeader:
    peak, key = roof.peak(dtype)
    ridge = peak * 1e3 / roof.bandwidth_gbs if peak and roof.bandwidth_gbs else None
    return RooflineHeader(peak_tflops=peak, peak_bandwidth_gbs=roof.bandwidth_gbs, ridge_flop_per_byte=ridge,
                          dtype=key, source=roof.source, peaks_by_dtype=dict(roof.peak_tflops), hint=roof.hint)


def dominant_dtype(points: list[RooflinePoint]) -> str | None:
    """The dtype that carries the most device time among the points (for the header roof)."""
    acc: dict[str, float] = {}
    for p in points:
        # copies and casts have no math: they must not pick the roof (a bf16 model's
        # headline once read "fp32" because its copy_ points were the longest)
        if p.dtype and p.flops > 0:
            acc[p.dtype] = acc.get(p.dtype, 0.0) + p.device_time_us
    return max(acc, key=acc.get) if acc else None


def _main_kernel(ctx: Context, op_row: int) -> int:
    """The longest activity billed to the op (a GEMM's cuBLAS workspace memset is not its class)."""
    hits = ctx.work[ctx.links.op[ctx.work] == op_row]
    return int(hits[np.argmax(ctx.trace.dur_us[hits])]) if len(hits) else -1


def _cpu_class(name: str) -> str:
    """Class of a CPU op (no kernel names on CPU): GEMMs by name, the rest by the kernel table."""
    from trainprof.trace.classify import load_classes

    if name in MATMUL_OPS:
        return "gemm"
    return load_classes().classify(name)


def _plain(v):
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def priced_flops(ctx: Context) -> tuple[float, int, int]:
    """(Σ FLOPs over every priced call, calls priced, priced ops lacking shapes): for
    checking the shape formulas against a FLOP counter."""
    t = ctx.trace
    total, n, missing = 0.0, 0, 0
    for r in priced_rows(ctx):
        cost = op_cost(t.name(r), t.arg(t.dims_id, r), t.arg(t.types_id, r), t.arg(t.concrete_id, r))
        if cost is None:
            missing += 1
        else:
            total += cost.flops
            n += 1
    return total, n, missing
