"""`bench bandwidth`: memory copy bandwidth of the device, and host↔device transfers on a GPU.

copy: `dst.copy_(src)` within device memory; bytes moved = 2 · size (each byte read once
and written once), the convention of STREAM's Copy and of `measured_bandwidth_gbs`.
h2d / d2h (GPU only): one direction over PCIe/NVLink-C2C, bytes moved = size, from pinned
(page-locked: DMA straight from the buffer, `non_blocking` copies) and pageable host memory
(the driver stages it through a pinned bounce buffer, usually slower).
GB/s are 10⁹ bytes/s. On CPU, copies of ≥ 64 MiB (far beyond the caches: DRAM) become
the `measured` bandwidth of the roofline (backends/cpu.record_bandwidth_gbs) when other
processes used at most half of each core meanwhile (backends/cpu_peak.py).
"""

from __future__ import annotations

from typing import Any, Callable

from trainprof.backends import DeviceBackend
from trainprof.backends import cpu_peak
from trainprof.bench import Progress
from trainprof.bench.config import BandwidthConfig
from trainprof.bench.parse import human_bytes
from trainprof.bench.timing import rates, summarize, time_calls
from trainprof.errors import ResourceError

VERSION = 1
MiB = 2**20
RECORD_MIN_BYTES = 64 * MiB


def cases(cfg: BandwidthConfig, kind: str) -> list[tuple[str, str, int]]:
    """(test, memory, bytes) in run order."""
    out = [("copy", "device" if kind == "cuda" else "host", n) for n in cfg.sizes]
    if kind == "cuda":
        out += [(t, m, n) for n in cfg.sizes for t in ("h2d", "d2h") for m in ("pinned", "pageable")]
    return out


def _copy_fn(test: str, memory: str, n: int, device: str) -> Callable[[], Any]:
    import torch

    if test == "copy":
        src = torch.ones(n, dtype=torch.uint8, device=device)  # ones, not empty: touch every page
        dst = torch.zeros_like(src)
        return lambda: dst.copy_(src)
    pinned = memory == "pinned"
    host = torch.ones(n, dtype=torch.uint8, pin_memory=pinned)
    dev = torch.zeros(n, dtype=torch.uint8, device=device)
    if test == "h2d":
        return lambda: dev.copy_(host, non_blocking=pinned)
    return lambda: host.copy_(dev, non_blocking=pinned)


def run(cfg: BandwidthConfig, backend: DeviceBackend, progress: Progress | None = None) -> dict[str, Any]:
    free = backend.available_memory_bytes()
    if free is not None and 2 * max(cfg.sizes) > free:
        raise ResourceError(f"bench bandwidth: two buffers of {human_bytes(max(cfg.sizes))} do not "
                            f"fit in the {human_bytes(free)} of free memory; pass smaller --sizes")
    rows = []
    todo = cases(cfg, backend.kind)
    with cpu_peak.LoadProbe() as probe:  # a bandwidth measured under load is not kept (backends/cpu_peak.py)
        for i, (test, memory, n) in enumerate(todo):
            if progress:
                progress(i, len(todo), f"{test} {memory} {human_bytes(n)}")
            fn = _copy_fn(test, memory, n, backend.device)
            times = time_calls(fn, backend, warmup=cfg.warmup, iters=cfg.iters)
            del fn
            moved = 2 * n if test == "copy" else n
            st = summarize(times)
            rows.append({"test": test, "memory": memory, "bytes": n, "bytes_moved": moved,
                         **st, **rates(moved, st, 1e9, "gbs")})
    out: dict[str, Any] = {"results": rows, "best": largest(rows)}
    if backend.kind == "cpu" and cfg.record:
        out["recorded"] = record_cpu_bandwidth(rows, probe.load)
    return out


def largest(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per test/memory, the row at the largest size (the one least flattered by caches)."""
    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        key = f"{r['test']}_{r['memory']}"
        if key not in best or r["bytes"] > best[key]["bytes"]:
            best[key] = {"bytes": r["bytes"], "gbs_max": r["gbs_max"], "gbs_median": r["gbs_median"]}
    return best


def record_cpu_bandwidth(rows: list[dict[str, Any]], load: cpu_peak.Load | None = None) -> dict[str, Any]:
    """Store DRAM-sized copies where `bandwidth_peak(mib=...)` looks (best call, as there), unless
    other processes loaded the machine meanwhile (`load`: then nothing is stored, and why)."""
    from trainprof.backends.cpu import record_bandwidth_gbs

    if load is not None and load.high:
        return {"gbs": {}, "cache": None, "others_cpu_share": load.others_cpu_share,
                "skipped": f"other processes used {load.others_cpu_share:.2f} of each core: not recorded"}
    stored: dict[str, float] = {}
    path = None
    for r in rows:
        if r["test"] == "copy" and r["bytes"] >= RECORD_MIN_BYTES and r["bytes"] % MiB == 0:
            mib = r["bytes"] // MiB
            path = record_bandwidth_gbs(r["gbs_max"], mib=mib, load=load)
            if path is not None:
                stored[f"copy{mib}"] = r["gbs_max"]
    return {"gbs": stored, "cache": str(path) if path else None}
