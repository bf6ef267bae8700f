"""Timing loop and statistics shared by the benchmarks (mamf-finder's habits).

Warm-up calls first (clock ramp, caches, kernel selection, first-touch page faults), then
each timed call is bracketed by two backend marks: CUDA events on a GPU (device time, not
host time), perf_counter on CPU. An optional `flush` runs *between* the marks' pairs, so
a cache flush is never timed.
"""

from __future__ import annotations

import statistics
from typing import Any, Callable, Sequence

from trainprof.backends import DeviceBackend

MIN_ITERS = 3  # a median of fewer than 3 samples is one sample
_BUDGET_CHECK_EVERY = 10  # GPU: sync this often to read the time budget (a sync drains the queue)


def time_calls(
    fn: Callable[[], Any],
    backend: DeviceBackend,
    *,
    warmup: int,
    iters: int,
    budget_s: float | None = None,
    flush: Callable[[], Any] | None = None,
) -> list[float]:
    """Seconds per timed call of `fn`: `iters` calls, or fewer once `budget_s` of host time
    has passed (never fewer than MIN_ITERS)."""
    for _ in range(warmup):
        fn()
    backend.synchronize()
    marks = []
    start = backend.host_clock()
    for i in range(iters):
        if flush is not None:
            flush()
        a = backend.mark()
        fn()
        marks.append((a, backend.mark()))
        if budget_s is not None and i + 1 >= MIN_ITERS:
            # On CPU each call has finished when it returns; a GPU only tells us when synced.
            if backend.kind != "cuda" or (i + 1) % _BUDGET_CHECK_EVERY == 0:
                backend.synchronize()
                if backend.host_clock() - start > budget_s:
                    break
    backend.synchronize()
    return [backend.seconds_between(a, b) for a, b in marks]


def summarize(times: Sequence[float]) -> dict[str, float | int]:
    """mean/median/min/max seconds of a sample (min time = max throughput)."""
    if not times:
        raise ValueError("no timings")
    return {
        "iters": len(times),
        "mean_s": statistics.fmean(times),
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
    }


def rates(work: float, stats: dict[str, float | int], unit: float, name: str) -> dict[str, float]:
    """Throughput of `work` per second at the mean, median and best (min-time) call, divided
    by `unit`: rates(flops, s, 1e12, "tflops") → tflops_mean, tflops_median, tflops_max."""
    return {
        f"{name}_mean": work / stats["mean_s"] / unit,
        f"{name}_median": work / stats["median_s"] / unit,
        f"{name}_max": work / stats["min_s"] / unit,
    }
