"""Nsight Compute: the command that collects roofline data, and its CSV read into our model.

ncu measures what the shapes can only estimate: executed FLOPs (per instruction type, and
the Tensor Core path's math ops) and real DRAM traffic (cache hits excluded). Reading
`ncu --csv --page raw --print-units base` output gives per-kernel points on the same
roofline as the trace-derived ones (analysis/cost/roofline.py), so the two can be compared.

FLOPs per kernel (the SpeedOfLight_RooflineChart convention: an FMA is 2 FLOPs):
    fp32  = fadd + fmul + 2·ffma    (smsp__sass_thread_inst_executed_op_f{add,mul,fma}_pred_on.sum)
    fp16  = hadd + hmul + 2·hfma    (…_op_h{add,mul,fma}_pred_on.sum)
    fp64  = dadd + dmul + 2·dfma    (…_op_d{add,mul,fma}_pred_on.sum)
    tensor = Σ sm__ops_path_tensor_src_*  (math ops executed in the Tensor Core path)
bytes = dram__bytes_read.sum + dram__bytes_write.sum; time = gpu__time_duration.sum.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass

from trainprof.recordtypes.roofline import NcuPoint

SIMT = {
    "fp32": ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
             "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"),
    "fp16": ("smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
             "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"),
    "fp64": ("smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
             "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"),
}
TENSOR = {
    "bf16": "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "fp16": "sm__ops_path_tensor_src_fp16_dst_fp32.sum",
    "fp16acc16": "sm__ops_path_tensor_src_fp16_dst_fp16.sum",
    "tf32": "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "fp8": "sm__ops_path_tensor_src_fp8.sum",
    "fp64": "sm__ops_path_tensor_src_fp64.sum",
}
TIME = "gpu__time_duration.sum"
DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")
METRICS = (TIME, *DRAM, *(m for ms in SIMT.values() for m in ms), *TENSOR.values(),
           "device__attribute_display_name")
SECTIONS = ("SpeedOfLight", "SpeedOfLight_RooflineChart", "SpeedOfLight_HierarchicalTensorRooflineChart",
            "MemoryWorkloadAnalysis")
PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
TIME_UNIT = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}  # → µs


@dataclass(frozen=True)
class NcuKernel:
    name: str
    device: str | None
    time_us: float
    dram_bytes: float
    flops: dict[str, float]  # per dtype, incl. "tensor_<dtype>"

    @property
    def total_flops(self) -> float:
        return sum(self.flops.values())

    @property
    def dtype(self) -> str | None:
        """The dtype carrying most FLOPs (tensor paths named by their source dtype)."""
        if not self.flops or self.total_flops == 0:
            return None
        k = max(self.flops, key=self.flops.get)
        k = k.removeprefix("tensor_")
        return "fp16" if k == "fp16acc16" else k


def _number(cell: str, unit: str) -> float | None:
    cell = cell.strip().replace(",", "")
    if cell in ("", "n/a", "N/A", "-"):
        return None
    try:
        v = float(cell)
    except ValueError:
        return None
    if not math.isfinite(v):  # "1e400", "inf": no measurement (it would reach analysis.json as Infinity)
        return None
    unit = unit.strip()
    if unit in TIME_UNIT:
        return v * TIME_UNIT[unit]
    m = re.fullmatch(r"([KMGT]?)byte", unit)
    if m:
        return v * PREFIX[m.group(1)]
    return v


def parse_ncu_csv(text: str, source: str = "ncu.csv") -> list[NcuKernel]:
    """Rows of `ncu --csv --page raw` (any units; --print-units base recommended)."""
    from trainprof.errors import InputError

    lines = [ln for ln in text.splitlines() if not ln.startswith("==")]  # ncu's own log lines
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
    except csv.Error as e:  # a field over csv's 128 KiB limit, a NUL byte: not ncu output
        raise InputError(f"{source}: not `ncu --csv` output ({e})") from None
    head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if head is None:
        raise InputError(f"{source}: not `ncu --csv --page raw` output (no 'Kernel Name' column)")
    cols = rows[head]
    idx = {c: i for i, c in enumerate(cols)}
    if TIME not in idx:
        raise InputError(f"{source}: no {TIME} column; collect with the command from `trainprof ncu-command`")
    body = rows[head + 1:]
    units = [""] * len(cols)
    name_at = idx["Kernel Name"]
    if body and (len(body[0]) <= name_at or not body[0][name_at].strip()):  # the units row has no kernel name
        units = body[0][:len(cols)] + [""] * (len(cols) - len(body[0]))  # a short one (#45: IndexError) padded
        body = body[1:]
    out = []
    for r in body:
        if len(r) < len(cols):
            continue

        def val(metric: str, r: list[str] = r) -> float:
            i = idx.get(metric)
            v = None if i is None else _number(r[i], units[i])
            return v or 0.0

        flops: dict[str, float] = {}
        for dt, (add, mul, fma) in SIMT.items():
            f = val(add) + val(mul) + 2 * val(fma)
            if f:
                flops[dt] = f
        for dt, m in TENSOR.items():
            if val(m):
                flops[f"tensor_{dt}"] = val(m)
        dev_col = idx.get("device__attribute_display_name")
        out.append(NcuKernel(name=r[idx["Kernel Name"]], device=r[dev_col] if dev_col is not None else None,
                             time_us=val(TIME), dram_bytes=sum(val(m) for m in DRAM), flops=flops))
    return out


def ncu_points(kernels: list[NcuKernel], roof, latency_pct: float = 10.0) -> list[NcuPoint]:
    """Group by kernel name and place on the roofline (`roof`: analysis.cost.roofline.Roof)."""
    groups: dict[str, list[NcuKernel]] = {}
    for k in kernels:
        groups.setdefault(k.name, []).append(k)
    out = []
    for name, ks in sorted(groups.items(), key=lambda kv: -sum(k.time_us for k in kv[1])):
        t = sum(k.time_us for k in ks)
        flops = sum(k.total_flops for k in ks)
        nbytes = sum(k.dram_bytes for k in ks)
        dtype = ks[0].dtype
        tensor = any(f.startswith("tensor_") for k in ks for f in k.flops)
        peak, peak_dtype = roof.peak(dtype, tensor)
        achieved = flops / (t * 1e-6) / 1e12 if t > 0 else 0.0
        intensity = flops / nbytes if nbytes > 0 else None
        att = pct = bound = None
        if peak and roof.bandwidth_gbs and intensity:
            att = min(peak, intensity * roof.bandwidth_gbs / 1e3)
            pct = 100.0 * achieved / att
            bound = ("latency" if pct < latency_pct else
                     "compute" if intensity >= peak * 1e3 / roof.bandwidth_gbs else "memory")
        out.append(NcuPoint(name=name, count=len(ks), device_time_us=t, flops=flops / len(ks), bytes=nbytes / len(ks),
                            intensity=intensity, dtype=peak_dtype, tensor_core=tensor, achieved_tflops=achieved,
                            achieved_gbs=nbytes / (t * 1e-6) / 1e9 if t > 0 else 0.0,
                            attainable_tflops=att, roofline_pct=pct, bound=bound))
    return out


def kernel_regex(names: list[str], max_len: int = 60) -> str:
    """A --kernel-name regex matching the given demangled kernel names (prefixes, escaped).
    A control character in a name is written as its regex escape (`\\x1b`, controls.visible's
    spelling), never raw: the command is printed to a terminal (issue #33: ESC c, DCS, BEL
    and U+009B reached it inside the regex), and the escape still matches the character."""
    from trainprof.controls import CONTROL, visible

    parts = []
    for n in names:
        n = n.removeprefix("void ")[:max_len]
        pieces = re.split(f"({CONTROL.pattern})", n)  # odd positions: one control character each
        parts.append("".join(visible(p) if i % 2 else re.escape(p).replace("\\ ", " ")  # ncu needs no escaped spaces
                             for i, p in enumerate(pieces)))
    return "regex:^(" + "|".join(dict.fromkeys(parts)) + ")"


def ncu_command(top_kernels: list[dict], steps: int, program: str, report: str = "trainprof_ncu") -> list[str]:
    """The commands to collect, export and import roofline data for the trace's top kernels.

    Skips one step's worth of their launches (warm-up, autotuning) and profiles the next
    step's worth; each profiled kernel is replayed ~40 times, so expect minutes.
    Built as argv lists and rendered with controls.shell_join (shlex.join, with `$'...'` for a
    word holding a control character): kernel names come from the trace, and a name holding
    `'; touch x; echo '` must stay one argument when the line is pasted.
    `program` is shell words (split with shlex, so its own quoting is kept).
    """
    import shlex

    from trainprof.controls import shell_join, shell_quote

    per_step = max(1, round(sum(k["count"] for k in top_kernels) / max(1, steps)))
    try:
        program_argv = shlex.split(program)
    except ValueError as e:
        from trainprof.errors import UsageError

        raise UsageError(f"--program {program!r}: {e}") from None
    collect = ["ncu", "--target-processes", "all", "--kernel-name-base", "demangled",
               "--kernel-name", kernel_regex([k["name"] for k in top_kernels]),
               "--launch-skip", str(per_step), "--launch-count", str(per_step)]
    for s in SECTIONS:
        collect += ["--section", s]
    collect += ["--metrics", ",".join(METRICS), "-o", report, "--", *program_argv]
    export = ["ncu", "--import", f"{report}.ncu-rep", "--csv", "--page", "raw", "--print-units", "base"]
    return [shell_join(collect), f"{shell_join(export)} > {shell_quote(report + '.csv')}"]
