"""How much of the CPU other processes used while a benchmark ran (Linux; None elsewhere).

On a shared machine a timed call that needs all cores waits for a descheduled thread, and
CPU timings come out as scheduler quanta (4-16 ms steps). The load average cannot show
this (the benchmark's own threads are in it), so we count busy CPU time from /proc/stat
(including hypervisor steal) and subtract our own and our joined children's CPU time:

    others_cpu_share = (Δbusy − Δself) / (Δwall · cores)
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class _Sample:
    wall_s: float
    busy_s: float  # all cores, all processes, incl. steal
    self_s: float  # this process + waited-for children


def _sample() -> _Sample | None:
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(x) for x in fields[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    busy = sum(ticks[:8]) - ticks[3] - ticks[4]
    hz = os.sysconf("SC_CLK_TCK")
    own = sum(getattr(resource.getrusage(w), a) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
              for a in ("ru_utime", "ru_stime"))
    return _Sample(time.monotonic(), busy / hz, own)


class Contention:
    """with Contention() as c: ...  then c.others_cpu_share (0..1, or None if unknown)."""

    others_cpu_share: float | None = None

    def __enter__(self) -> "Contention":
        self._start = _sample()
        return self

    def __exit__(self, *exc: object) -> None:
        end = _sample()
        if self._start is None or end is None:
            return
        wall = end.wall_s - self._start.wall_s
        if wall <= 0:
            return
        others = (end.busy_s - self._start.busy_s) - (end.self_s - self._start.self_s)
        self.others_cpu_share = round(min(1.0, max(0.0, others / (wall * (os.cpu_count() or 1)))), 3)
