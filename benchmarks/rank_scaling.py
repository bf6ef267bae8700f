"""Many ranks (issue #43 item 4): time and peak memory of `trainprof analyze DIR --json` for a job of
1, 8, 32 and 128 ranks, against the single-trace floor.

    python benchmarks/rank_scaling.py [--ranks 8,32,128] [--rank-mb 50] [--jobs 2] [--engine local]

The rank files are fleet_scale.py's (synthetic copies of the shared DDP trace, each with its own
`distributedInfo.rank`, made once under --dir). Each job runs once per count, with fleet_scale.py's
sampler (every process under the command, peak RSS per group: driver, pool workers). The floor
is `analyze` of one rank file alone (its whole process: start-up included), median of
--floor-trials runs. Per-rank cost = wall × jobs / ranks: what one rank costs a core; at the
floor it equals the single trace's time less the start-up the pool pays once. The single trace
overlaps its graph work with the rest on a second core, so its wall understates what it costs
the cores: its CPU seconds (the process and its children, user + system) are the fairer floor,
and each row also gives CPU seconds per rank (all processes, the driver's reduce included). Memory: the driver holds every rank's summary record, the
workers one trace at a time each, so the peak should follow the largest rank (worker) plus a
small per-rank slope (driver), not the sum of the traces.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_json  # noqa: E402
from fleet_scale import REPO, make_job, run  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "rank_scaling.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="8,32,128")
    ap.add_argument("--rank-mb", type=int, default=50)  # synth_trace.py makes no less than the DDP trace (47 MB)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--engine", default="local")
    ap.add_argument("--floor-trials", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "trainprof-fleet"))
    ap.add_argument("--out", default=str(RESULTS))
    a = ap.parse_args(argv)
    counts = [int(x) for x in a.ranks.split(",") if x.strip()]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    top = max(counts)
    files = make_job(top, a.rank_mb, Path(a.dir) / f"job_{top}x{a.rank_mb}mb")
    floors = [run([sys.executable, "-m", "trainprof", "analyze", str(files[0]), "--json"], "local", env)
              for _ in range(max(1, a.floor_trials))]
    floor = sorted(floors, key=lambda r: r["wall_s"])[len(floors) // 2]  # the median run
    rows = [{"ranks": 1, "wall_s": floor["wall_s"], "per_rank_core_s": floor["wall_s"],
             "cpu_s_per_rank": statistics.median(r["cpu_s"] for r in floors),
             "driver_peak_mb": floor["peak_rss_mb"].get("driver"), "worker_peak_mb": None, "rc": floor["rc"]}]
    for n in counts:
        job = Path(a.dir) / f"ranks_{n}x{a.rank_mb}mb"
        job.mkdir(parents=True, exist_ok=True)
        for f in files[:n]:  # hard links: the same bytes, no copy
            if not (job / f.name).exists():
                os.link(f, job / f.name)
        r = run([sys.executable, "-m", "trainprof", "analyze", str(job), "--json", "--jobs", str(a.jobs),
                 "--engine", a.engine], a.engine, env)
        rows.append({"ranks": n, "wall_s": r["wall_s"], "per_rank_core_s": round(r["wall_s"] * a.jobs / n, 3),
                     "cpu_s_per_rank": round(r["cpu_s"] / n, 3),
                     "driver_peak_mb": r["peak_rss_mb"].get("driver"), "worker_peak_mb": r["peak_rss_mb"].get("worker"),
                     "rc": r["rc"]})
        print(f"  {n} ranks: {r['wall_s']:.1f} s, rc {r['rc']}", flush=True)
    mb = files[0].stat().st_size / 1e6
    print(f"\n{a.engine}, --jobs {a.jobs}, {mb:.1f} MB of JSON per rank")
    print(f"{'ranks':>6} {'wall s':>8} {'core s / rank':>14} {'CPU s / rank':>13} {'driver MB':>10} {'worker MB':>10}")
    for r in rows:
        print(f"{r['ranks']:>6} {r['wall_s']:>8.2f} {r['per_rank_core_s']:>14.3f} {r['cpu_s_per_rank']:>13.3f} "
              f"{r['driver_peak_mb'] or '-':>10} {r['worker_peak_mb'] or '-':>10}")
    write_json(a.out, {"benchmark": "rank_scaling", "env": {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "python": platform.python_version(),
        "cores": os.cpu_count(), "load_avg_at_end": os.getloadavg(), "rank_json_mb": round(mb, 1), "jobs": a.jobs,
        "engine": a.engine}, "rows": rows})
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
