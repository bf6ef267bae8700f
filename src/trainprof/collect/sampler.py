"""A background thread that samples system sensors at a fixed interval during training.

    with SystemSampler(default_sensors("cuda"), interval_s=0.5) as s:
        train()
    s.samples  # [{"t_s": 0.0, "cpu_util_pct": ..., "gpus": [...]}, ...]

One sample is taken at start and one at stop, so a run of any length is bracketed and the
energy of its window can be interpolated (analysis/run/energy.py). Times are `clock()` seconds
(perf_counter by default: the clock the step timer uses on the host), kept as `t_s`
relative to the first sample with the origin in `t0`, so step spans from the Monitor line
up with samples.

Cost: the thread wakes once per interval and holds the GIL for one read of every sensor.
The host sensor's read measured 1.0 ms here, 0.8 ms of it listing child processes (a /proc
scan) for the workers' RSS: 0.2% of one core at the 0.5 s default. NVML is not measured yet
(no GPU). benchmarks/sampler_overhead.py measures the effect on step time.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

from trainprof.backends.sensors import Sensor

DEFAULT_INTERVAL_S = 0.5  # nvidia-smi dmon and DCGM sample at 1 s; twice that resolves short runs


class SystemSampler:
    def __init__(self, sensors: Sequence[Sensor], interval_s: float = DEFAULT_INTERVAL_S,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.interval_s = interval_s
        self.clock = clock
        self.sensors = [s for s in sensors if s.reason is None]
        self.unavailable = {s.name: s.reason for s in sensors if s.reason is not None}
        self.samples: list[dict[str, Any]] = []
        self.errors: dict[str, str] = {}
        self.t0: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def sample_now(self) -> dict[str, Any]:
        """Read every sensor once and append the sample (also usable without the thread)."""
        t = self.clock()
        row: dict[str, Any] = {}
        for s in list(self.sensors):
            try:
                row.update(s.read())
            except Exception as e:  # noqa: BLE001 - a sensor failing mid-run must not stop training
                self.errors[s.name] = f"{type(e).__name__}: {e}"
                self.sensors.remove(s)  # one failure is enough: do not retry every interval
        with self._lock:
            if self.t0 is None:
                self.t0 = t
            row = {"t_s": t - self.t0, **row}
            self.samples.append(row)
        return row

    def _loop(self) -> None:
        # Event.wait, not sleep: stop() wakes the thread at once instead of after an interval.
        while not self._stop.wait(self.interval_s):
            self.sample_now()

    def start(self) -> "SystemSampler":
        if self._thread is not None:
            raise RuntimeError("SystemSampler already started")
        self.sample_now()
        self._thread = threading.Thread(target=self._loop, name="trainprof-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self.sample_now()

    def __enter__(self) -> "SystemSampler":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def relative(self, t: float) -> float:
        """A `clock()` time as seconds since the first sample (the samples' `t_s` axis)."""
        if self.t0 is None:
            raise RuntimeError("no sample taken yet")
        return t - self.t0
