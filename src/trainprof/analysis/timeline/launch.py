"""Launch statistics: how fast the host feeds the GPU.

* CPU launch time: duration of the runtime/driver call that issued each GPU activity.
* Launch-to-start delay: activity start − launch start. Small (~5-20 µs) when the GPU waits
  for work (launch-bound); large when the queue is deep (GPU-bound, which is good).
* Short kernels: kernels under `short_us` (10 µs default: the same order as a launch, so a
  stream of them cannot be fed faster than the host launches them).
"""

from __future__ import annotations

import numpy as np

from trainprof.analysis.timeline.context import Context
from trainprof.recordtypes.timeline import Latency, LaunchStats
from trainprof.trace.ids import distinct


def _stats(x: np.ndarray) -> Latency:
    if not len(x):
        return Latency(count=0, mean_us=None, p50_us=None, p95_us=None)
    return Latency(count=int(len(x)), mean_us=float(x.mean()),
                   p50_us=float(np.percentile(x, 50)), p95_us=float(np.percentile(x, 95)))


def launch_stats(ctx: Context, short_us: float = 10.0) -> LaunchStats:
    t = ctx.trace
    rows = ctx.work
    launch = ctx.links.launch[rows]
    linked = launch >= 0
    calls = distinct(launch[linked], len(t))
    delay = t.ts_us[rows[linked]] - t.ts_us[launch[linked]]
    k = ctx.kernels
    short = t.dur_us[k] < short_us
    kt = float(t.dur_us[k].sum())
    n_steps = max(1, len(ctx.steps))
    return LaunchStats(
        linked_pct=100.0 * ctx.links.linked_fraction,
        cpu_launch=_stats(t.dur_us[calls]),
        launch_to_start=_stats(delay),
        kernels=int(len(k)),
        kernels_per_step=float(len(k)) / n_steps,
        short_kernel_threshold_us=short_us,
        short_kernel_count_pct=100.0 * float(short.mean()) if len(k) else 0.0,
        short_kernel_time_pct=100.0 * float(t.dur_us[k][short].sum()) / kt if kt > 0 else 0.0,
    )
