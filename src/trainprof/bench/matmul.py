"""`bench matmul`: the maximum achievable matmul TFLOP/s over a sweep of shapes, per dtype.

Method after ml-engineering's mamf-finder: warm-up calls, then timed calls bracketed by
device marks (CUDA events / perf_counter), with the L2 cache flushed between calls on a
GPU so no call finds its operands cached; mean, median and max (best call) TFLOP/s per
shape. `best_tflops` of a dtype is the max over shapes of the per-shape max, the
benchmark's ceiling (the datasheet bf16 peak of an H100 SXM is 989 TFLOP/s; mamf-finder
reaches ~795). On CPU the best fp32/bf16 numbers become the `measured` peak that MFU and
the roofline use (backends/cpu.record_matmul_tflops), when the machine was quiet meanwhile:
other processes' CPU is probed over the sweep and above half of each core nothing is stored.
"""

from __future__ import annotations

from typing import Any, Callable

from trainprof.backends import DeviceBackend
from trainprof.backends import cpu_peak
from trainprof.bench import Progress
from trainprof.bench.config import MatmulConfig
from trainprof.bench.gemm import Gemm, make_gemm, matmul_precision
from trainprof.bench.timing import rates, summarize, time_calls
from trainprof.errors import ResourceError

VERSION = 1  # bump when the method changes, so old results can be told apart
L2_FLUSH_BYTES = 256 * 10**6  # well above a GPU's L2 (H100: 50 MB); mamf-finder's size
RECORDED_DTYPES = ("fp32", "bf16")  # what MFU and the roofline read on CPU


def l2_flusher(backend: DeviceBackend) -> Callable[[], Any] | None:
    """A call that overwrites a buffer bigger than L2 (GPU only; CPU caches are left alone:
    every default CPU shape above 256 already overflows L2, and a flush would cost more
    than the GEMM)."""
    if backend.kind != "cuda":
        return None
    import torch

    buf = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=backend.device)
    return buf.zero_


def fits(cfg: MatmulConfig, backend: DeviceBackend) -> list[tuple[int, int, int]]:
    """The shapes whose operands fit in half the free memory (the rest of a sweep still runs)."""
    free = backend.available_memory_bytes()
    if free is None:
        return list(cfg.shapes)
    widest = max(cfg.dtypes, key=lambda d: Gemm(1, 1, 1).operand_bytes(d))
    return [s for s in cfg.shapes if Gemm(*s).operand_bytes(widest) <= free / 2]


def cases(cfg: MatmulConfig, shapes: list[tuple[int, int, int]]) -> list[tuple[str, str, Gemm]]:
    return [(d, op, Gemm(*s)) for d in cfg.dtypes for s in shapes
            for op in (("mm",) if d == "fp8" else cfg.ops)]


def run(cfg: MatmulConfig, backend: DeviceBackend, progress: Progress | None = None) -> dict[str, Any]:
    shapes = fits(cfg, backend)
    if not shapes:
        raise ResourceError("bench matmul: no shape fits in half of the free device memory; "
                            "pass smaller --sizes")
    skipped = [Gemm(*s).label for s in cfg.shapes if s not in shapes]
    flush = l2_flusher(backend)
    rows = []
    todo = cases(cfg, shapes)
    with cpu_peak.LoadProbe() as probe:  # a peak measured under load is not kept (backends/cpu_peak.py)
        for i, (dtype, op, g) in enumerate(todo):
            if progress:
                progress(i, len(todo), f"{dtype} {op} {g.label}")
            with matmul_precision(dtype):
                fn = make_gemm(g, dtype, op, backend.device)
                times = time_calls(fn, backend, warmup=cfg.warmup, iters=cfg.iters,
                                   budget_s=cfg.budget_s, flush=flush)
            del fn  # free the operands before the next shape
            st = summarize(times)
            rows.append({"dtype": dtype, "op": op, "shape": g.label, "m": g.m, "n": g.n, "k": g.k,
                         "flops": g.flops, **st, **rates(g.flops, st, 1e12, "tflops")})
    best = best_per_dtype(rows)
    out: dict[str, Any] = {"results": rows, "best": best, "skipped_shapes": skipped,
                           "l2_flush_bytes": L2_FLUSH_BYTES if flush else 0}
    if backend.kind == "cpu" and cfg.record:
        out["recorded"] = record_cpu_peaks(best, probe.load)
    elif backend.kind == "cuda" and cfg.record:  # the ceiling `run` puts MFU against (backends/ceiling.py)
        out["recorded"] = record_gpu_ceilings(backend.device_name(), best)
    return out


def best_per_dtype(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per dtype, the row with the highest max TFLOP/s: `best_tflops` and its shape."""
    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        b = best.get(r["dtype"])
        if b is None or r["tflops_max"] > b["best_tflops"]:
            best[r["dtype"]] = {"best_tflops": r["tflops_max"], "median_tflops": r["tflops_median"],
                                "shape": r["shape"], "m": r["m"], "n": r["n"], "k": r["k"], "op": r["op"]}
    return best


def record_gpu_ceilings(device: str, best: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Store each dtype's best TFLOP/s as this GPU's achievable ceiling (backends/ceiling.py)."""
    import torch

    from trainprof.backends import ceiling

    stored = {d: b["best_tflops"] for d, b in best.items() if b["best_tflops"] > 0}
    path = None
    for d, v in stored.items():
        path = ceiling.record(device, d, v, torch.__version__)
    return {"tflops": stored if path else {}, "cache": str(path) if path else None}


def record_cpu_peaks(best: dict[str, dict[str, Any]], load: cpu_peak.Load | None = None) -> dict[str, Any]:
    """Store fp32/bf16 bests where `matmul_peak` looks (same file and keys), unless other
    processes loaded the machine while the sweep ran (`load`; then nothing is stored, and why)."""
    from trainprof.backends.cpu import record_matmul_tflops

    if load is not None and load.high:
        return {"tflops": {}, "cache": None, "others_cpu_share": load.others_cpu_share,
                "skipped": f"other processes used {load.others_cpu_share:.2f} of each core: not recorded"}
    stored: dict[str, Any] = {}
    path = None
    for dtype in RECORDED_DTYPES:
        if dtype in best:
            path = record_matmul_tflops(dtype, best[dtype]["best_tflops"], load)
            if path is not None:
                stored[dtype] = best[dtype]["best_tflops"]
    return {"tflops": stored, "cache": str(path) if path else None}
