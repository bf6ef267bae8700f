"""Cost of matching collectives across ranks (analysis/job/collectives_align.py) in its worst
case: every collective alike (identical signatures), so every shift is a candidate.

    python benchmarks/collectives_align.py [--ranks 8] [--n 5000] [--period 1] [--trials 3]

Prints the median wall time of `job_collectives` over synthetic ranks whose all_reduces are
10 ms apart (rank r arriving r·10 µs late); `--period 7` repeats a pattern of 7 sizes.
"""

from __future__ import annotations

import argparse
import statistics
import time

from trainprof.analysis.job.collectives_job import job_collectives


def block(n: int, late_us: float, period: int) -> dict:
    starts = [i * 10_000.0 + late_us for i in range(n)]
    return {"source": "nccl", "count": n, "kept": n, "op": ["all_reduce"] * n, "group": ["0"] * n,
            "seq": list(range(n)), "bytes": [float(1 << (20 + i % period)) for i in range(n)],
            "start_us": starts, "end_us": [s + 6_000.0 for s in starts], "step_number": [], "step_cpu_start_us": []}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--period", type=int, default=1)
    ap.add_argument("--trials", type=int, default=3)
    a = ap.parse_args()
    ranks = {r: block(a.n, 10.0 * r, a.period) for r in range(a.ranks)}
    times = []
    for _ in range(a.trials):
        t0 = time.perf_counter()
        job = job_collectives(ranks)
        times.append(time.perf_counter() - t0)
    print(f"{a.ranks} ranks x {a.n} all_reduces, period {a.period}: matched {job.matched}, "
          f"median {statistics.median(times):.3f} s of {a.trials} ({', '.join(f'{t:.3f}' for t in times)})")


if __name__ == "__main__":
    main()
