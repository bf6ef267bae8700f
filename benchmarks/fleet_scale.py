"""A job of many ranks: `trainprof analyze DIR --engine local` vs `--engine ray`, on this machine.

    python benchmarks/fleet_scale.py [--ranks 64] [--rank-mb 50] [--jobs 2] [--trials 1]

Makes --ranks synthetic rank traces of ~--rank-mb MB of JSON each (benchmarks/synth_trace.py
replicating the shared DDP trace, then one copy per rank with its own `distributedInfo.rank`)
in --dir, then runs each engine on the folder (`--json`, stdout to a pipe), taking turns per
trial. A sampler thread polls every process under the command (psutil, every 50 ms) and keeps
each one's peak RSS; processes are grouped as the driver (the command itself), workers (local:
the pool's processes; ray: `ray::` task workers) and, for Ray, its own services (raylet, GCS,
...). Prints ranks/s and peak RSS per worker; writes benchmarks/results/fleet_scale.json.
Ray's wall time includes starting and stopping its local instance (measured alone as
`ray_start_s`, by the same command on a 1-rank folder).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from _common import write_json

REPO = Path(__file__).resolve().parent.parent
DDP = REPO / "tests" / "data" / "traces" / "real" / "hta_ddp_2rank_nccl_v100" / "df_index_resolver.json.gz"
RESULTS = REPO / "benchmarks" / "results" / "fleet_scale.json"
BENCH_VERSION = 1
_RANK = re.compile(rb'("rank"\s*:\s*)\d+')


def make_job(n: int, rank_mb: int, folder: Path) -> list[Path]:
    """n rank files of ~rank_mb MB each (made once, reused while they exist)."""
    folder.mkdir(parents=True, exist_ok=True)
    base = folder.parent / f"base_{rank_mb}mb.json"
    if not base.exists():
        tmp = base.with_suffix(".partial")
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "synth_trace.py"), str(DDP), str(tmp),
                        "--target-mb", str(rank_mb)], check=True)
        tmp.rename(base)
    out = []
    for r in range(n):
        p = folder / f"rank{r:04d}.json"
        if not p.exists():
            tmp = p.with_suffix(".partial")
            with open(base, "rb") as src, open(tmp, "wb") as dst:
                for line in src:
                    if b'"distributedInfo"' in line:
                        line = _RANK.sub(lambda m, r=r: m.group(1) + str(r).encode(), line, count=1)
                    dst.write(line)
            tmp.rename(p)
        out.append(p)
    return out


def _group(names: set[str], is_driver: bool, engine: str) -> str:
    """driver / worker / ray services, from every title a process had while sampled: Ray task
    workers start as default_worker.py or "ray::IDLE" and run as "ray::analyze_source";
    "ray::DashboardAgent" and "ray::RuntimeEnvAgent" are services."""
    if is_driver:
        return "driver"
    if engine != "ray":
        return "worker"
    worker = any(n.startswith(("ray::IDLE", "ray::analyze")) or "default_worker.py" in n for n in names)
    return "worker" if worker else "ray services"


def run(cmd: list[str], engine: str, env: dict[str, str]) -> dict[str, Any]:
    peaks: dict[int, int] = {}
    names: dict[int, set[str]] = {}
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)
    root = psutil.Process(p.pid)
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                procs = [root] + root.children(recursive=True)
            except psutil.Error:
                procs = []
            for q in procs:
                try:
                    peaks[q.pid] = max(q.memory_info().rss, peaks.get(q.pid, 0))
                    names.setdefault(q.pid, set()).add(" ".join(q.cmdline())[:200])
                except psutil.Error:
                    pass
            time.sleep(0.05)

    t0 = time.perf_counter()
    c0 = _children_cpu_s()
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    cpu = _children_cpu_s() - c0  # the command and every process it waited for (the pool's workers)
    stop.set()
    th.join()
    by_group: dict[str, list[int]] = {}
    for pid, rss in peaks.items():
        by_group.setdefault(_group(names.get(pid, set()), pid == p.pid, engine), []).append(rss)
    result = {"rc": p.returncode, "wall_s": wall, "cpu_s": round(cpu, 3),
              "peak_rss_mb": {g: round(max(v) / 2**20, 1) for g, v in by_group.items()},
              "processes": {g: len(v) for g, v in by_group.items()},
              "sum_peak_rss_mb": round(sum(peaks.values()) / 2**20, 1)}
    if p.returncode != 0:
        result["stderr_tail"] = err.decode(errors="replace")[-1500:]
    else:
        doc = json.loads(out)
        result["ranks_analysed"] = len(doc["ranks"])
    return result


def _children_cpu_s() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--rank-mb", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--engines", default="local,ray")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "trainprof-fleet"))
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    job = Path(args.dir) / f"job_{args.ranks}x{args.rank_mb}mb"
    t0 = time.perf_counter()
    files = make_job(args.ranks, args.rank_mb, job)
    json_mb = sum(f.stat().st_size for f in files) / 1e6
    print(f"{len(files)} ranks, {json_mb:,.0f} MB of JSON in {job} ({time.perf_counter() - t0:.0f} s to make)")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    base = [sys.executable, "-m", "trainprof", "analyze", str(job), "--json", "--jobs", str(args.jobs)]
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
    for i in range(args.trials):
        for e in engines:
            r = run(base + ["--engine", e], e, env)
            runs[e].append(r)
            print(f"  {e} trial {i + 1}: {r['wall_s']:.1f} s, peak RSS {r['peak_rss_mb']}, rc {r['rc']}", flush=True)
    ray_start = None
    if "ray" in engines:
        one = Path(args.dir) / "job_1rank"
        one.mkdir(exist_ok=True)
        if not (one / files[0].name).exists():
            os.link(files[0], one / files[0].name)
        single = run(base[:4] + [str(one)] + base[5:] + ["--engine", "ray"], "ray", env)
        local1 = run(base[:4] + [str(one)] + base[5:] + ["--engine", "local"], "local", env)
        ray_start = round(single["wall_s"] - local1["wall_s"], 2)
        print(f"  ray start+stop (1-rank job, ray minus local): {ray_start} s")
    summary = {}
    for e, rs in runs.items():
        ok = [r for r in rs if r["rc"] == 0]
        if not ok:
            summary[e] = {"status": "failed", "error": rs[-1].get("stderr_tail")}
            continue
        wall = statistics.median(r["wall_s"] for r in ok)
        summary[e] = {"status": "ok", "median_wall_s": round(wall, 2), "ranks_per_s": round(args.ranks / wall, 3),
                      "worker_peak_rss_mb": max(r["peak_rss_mb"].get("worker", 0) for r in ok),
                      "driver_peak_rss_mb": max(r["peak_rss_mb"].get("driver", 0) for r in ok),
                      "services_peak_rss_mb": max(r["peak_rss_mb"].get("ray services", 0) for r in ok) or None,
                      "workers": max(r["processes"].get("worker", 0) for r in ok)}
        if e == "ray" and ray_start is not None:
            summary[e]["ray_start_s"] = ray_start
            summary[e]["ranks_per_s_without_start"] = round(args.ranks / max(wall - ray_start, 1e-9), 3)
    print(f"\n{'engine':<8} {'wall s':>8} {'ranks/s':>8} {'worker MB':>10} {'driver MB':>10} {'workers':>8}")
    for e, s in summary.items():
        if s["status"] == "ok":
            print(f"{e:<8} {s['median_wall_s']:>8} {s['ranks_per_s']:>8} {s['worker_peak_rss_mb']:>10} "
                  f"{s['driver_peak_rss_mb']:>10} {s['workers']:>8}")
        else:
            print(f"{e:<8} failed")
    payload = {"benchmark": "fleet_scale", "env": {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "benchmark_version": BENCH_VERSION,
        "python": platform.python_version(), "platform": platform.platform(), "cores": os.cpu_count(),
        "load_avg_at_end": os.getloadavg(), "ranks": args.ranks, "rank_json_mb": round(json_mb / len(files), 1),
        "jobs": args.jobs, "trials": args.trials}, "summary": summary, "runs": runs}
    write_json(args.out, payload)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
