"""Host-side step entry across ranks: information beside the waits, never a finding by itself.

On the aligned clocks (analysis/job/collectives_job.py), when each rank's ProfilerStep#N began
on the host:

    late_r(N) = max(0, entry_r(N) − median_{r' ≠ r} entry_r'(N))   (entry on the reference clock)

i.e. relative to its peers' typical entry, not to the earliest rank's: measured from the
first rank, one early rank made every other rank "late" by the same 35–36 ms and a late rank
37.86 ms late (issue #39); from the peers' median that rank is 2.4 ms late and the others 0.
An early rank is not late (0). Reported per rank as the median over the steps all ranks recorded, the maximum, and per step.
With asynchronous launches the CPU runs ahead of the GPU by a varying amount (tens of ms is
common: on the shipped MI300 DDP trace the GPU starts a step 30 ms after its host), so a
rank whose host enters a step late costs nothing while its GPU still reaches the collective
on time. Only the waits at the collectives name a rank (analysis/job/collectives_waits.py); this
figure then tells whether the delay was already on the host (diagnose/job_rules.py,
late_ranks).
"""

from __future__ import annotations

import statistics

from trainprof.recordtypes.collectives import LateRank, Lateness, RankCollectives

MAX_STEPS = 100  # per-step lateness kept in the record (the median and max cover all steps)


def step_lateness(blocks: dict[int, RankCollectives], offsets: dict[int, float]) -> Lateness | None:
    entries: dict[int, dict[int, float]] = {}
    for r, b in blocks.items():
        for number, start in zip(b.step_number, b.step_cpu_start_us):
            entries.setdefault(number, {})[r] = start - offsets.get(r, 0.0)
    common = sorted(n for n, by in entries.items() if len(by) == len(blocks))
    if not common:
        return None
    late: dict[int, list[float]] = {r: [] for r in blocks}
    for number in common:
        by = entries[number]
        for r, t in by.items():
            peers = [x for q, x in by.items() if q != r]
            late[r].append(max(0.0, t - statistics.median(peers)))
    return Lateness(steps=common,
                    per_rank=[LateRank(rank=r, median_late_us=statistics.median(v), max_late_us=max(v),
                                       late_us=v[:MAX_STEPS]) for r, v in sorted(late.items())])
