"""CPU backend: host clock timing, process RSS, and a measured matmul peak.

On CPU there is no datasheet peak we can trust (turbo, SMT, AVX-512 vs AVX2, thread
count), so MFU is computed against the best matmul rate *measured* on this machine with
the current thread count, cached per machine. It is labelled `measured` everywhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any, Callable

from trainprof import atomic

CACHE_VERSION = 2  # bump when the measurement method changes


class CpuBackend:
    kind = "cpu"
    device = "cpu"

    def __init__(self, host_clock: Callable[[], float] = time.perf_counter) -> None:
        self.host_clock = host_clock

    def device_name(self) -> str:
        return cpu_model_name()

    def synchronize(self) -> None:
        pass  # CPU ops run eagerly: a returned op is a finished op

    def mark(self) -> float:
        return self.host_clock()

    def seconds_between(self, start: float, end: float) -> float:
        return end - start

    def reset_peak_memory(self) -> None:
        pass  # ru_maxrss cannot be reset; we report the process peak

    def peak_memory_bytes(self) -> tuple[int | None, str]:
        # ru_maxrss: KiB on Linux, bytes on macOS.
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return (rss if sys.platform == "darwin" else rss * 1024), "process_rss"

    def memory_total_bytes(self) -> int | None:
        return _meminfo("MemTotal")

    def available_memory_bytes(self) -> int | None:
        return _meminfo("MemAvailable")

    def tf32_matmul(self) -> bool:
        return False

    def nvtx_range(self, name: str) -> Any:
        return contextlib.nullcontext()  # no NVTX without CUDA: nothing to mark

    def is_out_of_memory(self, exc: BaseException) -> bool:
        msg = str(exc)
        return isinstance(exc, MemoryError) or (
            isinstance(exc, RuntimeError)
            and ("can't allocate memory" in msg or "not enough memory" in msg)
        )


def cpu_model_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def proc_kib(path: str, field: str) -> int | None:
    """Bytes of a `Field:   N kB` line of a /proc file (meminfo, self/status; proc(5)); None
    where there is no such file or line (not Linux, a container without it)."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _meminfo(field: str) -> int | None:
    return proc_kib("/proc/meminfo", field)


def cache_dir() -> Path:
    base = os.environ.get("TRAINPROF_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "trainprof"
    )
    return Path(base)


def _cached(section: str, key: str, measure: Any, use_cache: bool) -> float:
    """Look `key` up in the per-machine cache file, else measure and store it."""
    path = cache_dir() / "cpu_peak.json"
    cache: dict[str, Any] = {}
    if use_cache:
        try:
            cache = json.loads(path.read_text("utf-8"))
            if cache.get("version") == CACHE_VERSION and key in cache.get(section, {}):
                return float(cache[section][key])
        except (OSError, ValueError):
            cache = {}
    value = float(measure())
    if use_cache:
        cache = cache if cache.get("version") == CACHE_VERSION else {"version": CACHE_VERSION}
        cache.setdefault(section, {})[key] = value
        try:
            atomic.write_text(path, json.dumps(cache, indent=1))
        except OSError:
            pass  # a read-only home must not stop a run; we just measure again next time
    return value


def _machine_key() -> str:
    import torch

    return f"{cpu_model_name()}|torch {torch.__version__}|threads {torch.get_num_threads()}"


def measured_matmul_tflops(dtype: str = "fp32", *, use_cache: bool = True) -> float:
    """Best achieved dense matmul TFLOP/s on this CPU for `dtype`, cached per machine.

    Cache key: CPU model, torch version, thread count, dtype, so a change of any of them
    re-measures. Costs ~1-3 s the first time on 2 cores.
    """
    return _cached("peaks", f"{_machine_key()}|{dtype}", lambda: _bench_matmul(dtype), use_cache)


def measured_bandwidth_gbs(*, use_cache: bool = True, mib: int = 256) -> float:
    """Best achieved memory bandwidth of a large copy (read + write bytes / s), cached like
    the matmul peak. 256 MiB per buffer is far beyond any CPU cache, so this is DRAM."""
    return _cached("bandwidth", f"{_machine_key()}|copy{mib}", lambda: _bench_copy(mib), use_cache)


def record_matmul_tflops(dtype: str, tflops: float) -> Path | None:
    """Store a benchmark's best matmul TFLOP/s for `dtype` under the key that
    `measured_matmul_tflops` reads, so MFU and roofline use it from now on (`trainprof
    bench matmul` calls this). Returns the cache file, or None if it could not be written."""
    return _store("peaks", f"{_machine_key()}|{dtype}", tflops)


def record_bandwidth_gbs(gbs: float, *, mib: int = 256) -> Path | None:
    """Store a benchmark's copy bandwidth (read + write GB/s, `mib` MiB per buffer) under
    the key that `measured_bandwidth_gbs(mib=mib)` reads."""
    return _store("bandwidth", f"{_machine_key()}|copy{mib}", gbs)


def _store(section: str, key: str, value: float) -> Path | None:
    """Overwrite one entry of the per-machine cache file (the file `_cached` reads)."""
    if not value > 0:
        raise ValueError(f"{section}[{key!r}] must be > 0, got {value}")
    path = cache_dir() / "cpu_peak.json"
    try:
        cache = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        cache = {}
    if not isinstance(cache, dict) or cache.get("version") != CACHE_VERSION:
        cache = {"version": CACHE_VERSION}
    cache.setdefault(section, {})[key] = float(value)
    try:
        atomic.write_text(path, json.dumps(cache, indent=1))
    except OSError:
        return None  # a read-only home: the benchmark result still stands in bench.json
    return path


def _bench_copy(mib: int) -> float:
    import torch

    n = mib * 2**20 // 4
    src = torch.ones(n)
    dst = torch.empty(n)
    dst.copy_(src)  # first touch: page faults are not bandwidth
    best = 0.0
    for _ in range(5):
        t0 = time.perf_counter()
        dst.copy_(src)
        best = max(best, 2 * n * 4 / (time.perf_counter() - t0))
    return best / 1e9


def _bench_matmul(dtype: str, n: int = 1024, budget_s: float = 1.0) -> float:
    """Max over short trials of 2·n³ FLOPs / seconds (max, not mean: a peak is a ceiling).

    Both `torch.mm` and `F.linear` are tried: on CPU they can take different kernels (fp16
    `mm` fell to ~0.001 TFLOP/s on a 2-core EPYC while `linear` reached 0.04), and a run's
    matmuls go through either, so the peak is the faster of the two.
    """
    import torch
    import torch.nn.functional as F

    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    a = torch.randn(n, n).to(tdtype)
    b = torch.randn(n, n).to(tdtype)
    best = 0.0
    for fn in (lambda: torch.mm(a, b), lambda: F.linear(a, b)):
        fn()  # warm-up: thread pool start, first-touch page faults, kernel selection
        deadline = time.perf_counter() + budget_s / 2
        trials = 0
        while trials < 2 or (time.perf_counter() < deadline and trials < 50):
            t0 = time.perf_counter()
            fn()
            best = max(best, 2 * n**3 / (time.perf_counter() - t0))
            trials += 1
    return best / 1e12

