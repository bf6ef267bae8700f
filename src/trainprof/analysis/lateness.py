"""Host-side lateness: ranks that enter a step after the others.

A rank that starts step N late (a slow data loader, a GC pause, a host sync) makes every
peer wait at the step's first collective; the collective's end times agree and its kernel
durations say "the others communicate a lot", which reads like a communication problem on
the *waiting* ranks. Aligning the ranks' clocks on collective ends (collectives_job.py)
and comparing when each rank's ProfilerStep#N began on the host names the late rank:

    late_r(N) = entry_r(N) − min_r' entry_r'(N)       (entry on the reference clock)

reported per rank as the median over the steps all ranks recorded, the maximum, and per step.
"""

from __future__ import annotations

import statistics

MAX_STEPS = 100  # per-step lateness kept in the record (the median and max cover all steps)


def step_lateness(blocks: dict[int, dict], offsets: dict[int, float]) -> dict | None:
    entries: dict[int, dict[int, float]] = {}
    for r, b in blocks.items():
        for number, start in zip(b.get("step_number", []), b.get("step_cpu_start_us", [])):
            entries.setdefault(number, {})[r] = start - offsets.get(r, 0.0)
    common = sorted(n for n, by in entries.items() if len(by) == len(blocks))
    if not common:
        return None
    late: dict[int, list[float]] = {r: [] for r in blocks}
    for number in common:
        first = min(entries[number].values())
        for r, t in entries[number].items():
            late[r].append(t - first)
    return {"steps": common,
            "per_rank": [{"rank": r, "median_late_us": statistics.median(v), "max_late_us": max(v),
                          "late_us": v[:MAX_STEPS]} for r, v in sorted(late.items())]}
