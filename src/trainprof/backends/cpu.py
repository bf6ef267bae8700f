"""CPU backend: host clock timing, process RSS, and the measured matmul and copy peaks.

On CPU there is no datasheet peak we can trust (turbo, SMT, AVX-512 vs AVX2, thread
count), so MFU is computed against the best matmul rate *measured* on this machine with
the current thread count. It is labelled `measured` everywhere; how it is measured, cached
and checked (with the machine's load) is cpu_peak.py's.
"""

from __future__ import annotations

import contextlib
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any, Callable

from trainprof.backends import cpu_peak
from trainprof.backends.cpu_peak import Measurement, cache_dir, measure, utc_now, write_entry  # noqa: F401


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

    def memory_now_bytes(self) -> int | None:
        """Resident set size now: /proc/self/statm's second field, in pages (Linux; ~5 µs a read).
        None elsewhere."""
        try:
            with open("/proc/self/statm", "rb") as f:
                return int(f.read().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            return None

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


_PAGE = resource.getpagesize()


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


def machine_key() -> str:
    """What a CPU peak depends on besides the method: the CPU, torch's kernels, the threads."""
    import torch

    return f"{cpu_model_name()}|torch {torch.__version__}|threads {torch.get_num_threads()}"


# Per process, each key is checked (or measured) once: a process is one run or one analysis,
# and a test session would otherwise pay a quick check (~0.2 s) for every run it makes.
_SEEN: dict[tuple[str, str], Measurement] = {}


def _once(key: str, bench: Callable[[], float], check: Callable[[], float], use_cache: bool) -> Measurement:
    if not use_cache:
        return measure(key, bench, check, use_cache=False)
    seen = (str(cpu_peak.cache_path()), key)
    if seen not in _SEEN:
        _SEEN[seen] = measure(key, bench, check)
    return _SEEN[seen]


def matmul_peak(dtype: str = "fp32", *, use_cache: bool = True) -> Measurement:
    """Best dense matmul TFLOP/s on this CPU for `dtype`, with its load and date (cpu_peak.py:
    cached per CPU model, torch version, thread count and dtype; checked once per process).
    Costs ~2-3 s when measured on 2 cores, ~0.2 s when the cache is checked."""
    return _once(matmul_key(dtype), lambda: _peak_matmul(dtype), lambda: _quick_matmul(dtype), use_cache)


def matmul_key(dtype: str) -> str:
    return f"{machine_key()}|{dtype}"


def bandwidth_key(mib: int = 256) -> str:
    return f"{machine_key()}|copy{mib}"


def bandwidth_peak(*, use_cache: bool = True, mib: int = 256) -> Measurement:
    """Best DRAM copy bandwidth (read + write bytes / s, STREAM's Copy), cached and checked like
    the matmul peak. 256 MiB per buffer is far beyond any CPU cache, so this is DRAM."""
    return _once(bandwidth_key(mib), lambda: _bench_copy(mib),
                 lambda: _bench_copy(mib, QUICK_COPIES, 0.0), use_cache)


def measured_matmul_tflops(dtype: str = "fp32", *, use_cache: bool = True) -> float:
    return matmul_peak(dtype, use_cache=use_cache).value


def measured_bandwidth_gbs(*, use_cache: bool = True, mib: int = 256) -> float:
    return bandwidth_peak(use_cache=use_cache, mib=mib).value


def record_matmul_tflops(dtype: str, tflops: float, load: cpu_peak.Load | None = None) -> Path | None:
    """Store a benchmark's best matmul TFLOP/s for `dtype` under the key `matmul_peak` reads,
    with a quick check taken now as its reference (`trainprof bench matmul` calls this when
    the machine was quiet; `load`: the sweep's, what the entry says it was measured under).
    Returns the cache file, or None if it could not be written."""
    return _record(f"{machine_key()}|{dtype}", tflops, lambda: _quick_matmul(dtype), load)


def record_bandwidth_gbs(gbs: float, *, mib: int = 256, load: cpu_peak.Load | None = None) -> Path | None:
    """Store a benchmark's copy bandwidth (read + write GB/s, `mib` MiB per buffer) under
    the key that `bandwidth_peak(mib=mib)` reads (`load` as for record_matmul_tflops)."""
    return _record(f"{machine_key()}|copy{mib}", gbs, lambda: _bench_copy(mib, QUICK_COPIES, 0.0), load)


def _record(key: str, value: float, check: Callable[[], float], load: cpu_peak.Load | None) -> Path | None:
    """The entry records the load the value was measured under (the benchmark's sweep), not
    that of the quick check taken here as its reference; written under the cache's lock, as
    `cpu_peak.measure` writes."""
    if not value > 0:
        raise ValueError(f"{key!r} must be > 0, got {value}")
    with cpu_peak.LoadProbe() as p:  # looked up at call time: tests replace it
        ref = float(check())
    load = load or p.load
    m = Measurement(float(value), key, "measured", utc_now(), load.others_cpu_share,
                    load.load_avg_1m_per_core, ref, None, False)
    path = cpu_peak.cache_path()
    _SEEN.pop((str(path), key), None)  # the next read sees the new value
    with cpu_peak.locked(path):
        return write_entry(key, m)


QUICK_COPIES = 3  # ~35 ms of copying at 256 MiB: the bandwidth's quick check
MIN_COPIES, COPY_BUDGET_S = 10, 0.3  # the measurement: ≥ 10 copies and ≥ 0.3 s, best one


def _bench_copy(mib: int, copies: int = MIN_COPIES, budget_s: float = COPY_BUDGET_S) -> float:
    """Best GB/s of `dst.copy_(src)` over `mib` MiB fp32 buffers, counting read + write bytes
    (STREAM's Copy; the write-allocate read a cache line costs is not counted, as there).
    torch's copy runs on all intra-op threads. At least `copies` copies and `budget_s` of
    them: on a shared machine any one 10 ms copy may be descheduled, and the best of many is
    the machine's, not the scheduler's (5 copies read 3.73 GB/s on an EPYC that copies 47)."""
    import torch

    n = mib * 2**20 // 4
    src = torch.ones(n)
    dst = torch.empty(n)
    dst.copy_(src)  # first touch: page faults are not bandwidth
    best = 0.0
    deadline = time.perf_counter() + budget_s
    done = 0
    while done < copies or time.perf_counter() < deadline:
        t0 = time.perf_counter()
        dst.copy_(src)
        best = max(best, 2 * n * 4 / (time.perf_counter() - t0))
        done += 1
    return best / 1e9


PEAK_SIZES = ((1024, 0.6), (512, 0.3))  # (n, budget s) of the peak's sweep: ~1 s a dtype
QUICK_N, QUICK_BUDGET_S = 512, 0.2  # the matmul quick check


def _peak_matmul(dtype: str) -> float:
    """The best over a small sweep of square sizes (mamf-finder takes the max over shapes).
    n = 1024 spreads over every intra-op thread; n = 512 is ~1 ms of one or two threads, so
    the best of many such calls is found between a shared machine's preemptions: measured on
    the 2-vCPU EPYC under load 3.5, fp32 at n = 1024 read 0.08 TFLOP/s, at n = 512 0.22, the
    idle peak (0.209 at n = 1024 on the idle machine)."""
    return max(_bench_matmul(dtype, n=n, budget_s=b) for n, b in PEAK_SIZES)


def _quick_matmul(dtype: str) -> float:
    """The quick check of a matmul peak: the same method at QUICK_N within QUICK_BUDGET_S."""
    return _bench_matmul(dtype, n=QUICK_N, budget_s=QUICK_BUDGET_S)


def _bench_matmul(dtype: str, n: int = 1024, budget_s: float = 1.0) -> float:
    """Max over short trials of 2·n³ FLOPs / seconds (max, not mean: a peak is a ceiling).

    Both `torch.mm` and `F.linear` are tried: on CPU they can take different kernels (fp16
    `mm` fell to ~0.001 TFLOP/s on a 2-core EPYC while `linear` reached 0.04), and a run's
    matmuls go through either, so the peak is the faster of the two.
    """
    import torch
    import torch.nn.functional as F

    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    g = torch.Generator().manual_seed(0)  # private: never a draw from the caller's global stream
    a = torch.randn(n, n, generator=g).to(tdtype)
    b = torch.randn(n, n, generator=g).to(tdtype)
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

