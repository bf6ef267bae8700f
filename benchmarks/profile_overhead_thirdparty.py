"""What `trainprof profile` costs a program nobody here wrote: nanoGPT's train.py (vendored
unmodified under tests/data/thirdparty/nanogpt), bare and profiled, in wall and CPU time.

nanoGPT times every iteration itself (`iter N: loss X, time Yms`). Each trial runs it three
ways in fresh processes, the order rotating between trials so drift hits all three:

* bare: `python train.py ...`;
* idle: `trainprof profile -- python train.py ...`: the run folder is analysed as soon as the
  window is recorded, at idle CPU priority (SCHED_IDLE), while the program trains on;
* after: the same with `--analysis after`: analysed once the program has ended.

The program uses every core (torch's default threads), so the machine is busy: the analysis
competes with it. Per trial and mode we take the median iteration time after the window
(iterations from AFTER_WINDOW on), and report the median over trials of its ratio to bare;
CPU is the whole process tree's user + system seconds (trainprof, the program, the peak
check's process), from RUSAGE_CHILDREN.

    python benchmarks/profile_overhead_thirdparty.py [--trials 3] [--iters 80]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "data" / "thirdparty"))

import make_data  # noqa: E402

VERSION = 1
ITER = re.compile(r"^iter (\d+): loss [\d.]+, time ([\d.]+)ms", re.M)
WINDOW = ["--warmup", "2", "--steps", "10", "--profile-steps", "2"]  # profile's defaults
AFTER_WINDOW = 20  # the window ends at optimizer step 16 (2 + 10 + 2 + 2); a margin for its analysis to start


def one(mode: str, iters: int, base: Path) -> dict:
    work = Path(tempfile.mkdtemp(dir=base))
    prep = make_data.nanogpt(work, max_iters=iters)
    cmd = [sys.executable, *prep.argv]
    if mode != "bare":
        cmd = [sys.executable, "-m", "trainprof", "profile", *WINDOW, "--system-interval", "0", "--no-report",
               "--analysis", mode, "--out", str(work / "prof"), "--", *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    times = {int(i): float(ms) for i, ms in ITER.findall(done.stdout)}
    late = [t for i, t in times.items() if i >= AFTER_WINDOW]
    return {"mode": mode, "wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "after_window_median_ms": statistics.median(late), "iterations": len(times)}


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--iters", type=int, default=80)
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "profile_overhead_thirdparty.json"))
    args = ap.parse_args()
    modes = ["bare", "idle", "after"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for trial in range(args.trials):
            order = modes[trial % 3:] + modes[:trial % 3]
            got = {m: one(m, args.iters, Path(tmp)) for m in order}
            rows.append(got)
            print(f"trial {trial}: " + ", ".join(f"{m} {got[m]['after_window_median_ms']:.1f} ms/iter, "
                                                 f"{got[m]['cpu_s']:.1f} CPU-s" for m in modes), flush=True)
    out = {"benchmark": "profile_overhead_thirdparty", "version": VERSION, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "load_avg_1m": os.getloadavg()[0], "cores": os.cpu_count(), "iters": args.iters, "trials": rows}
    print(f"\nnanoGPT train.py, {args.iters} iterations, {args.trials} trials, load {out['load_avg_1m']:.1f} "
          f"on {out['cores']} cores; after-window iteration time and CPU, median ratio to bare:")
    for m in ("idle", "after"):
        r = statistics.median(t[m]["after_window_median_ms"] / t["bare"]["after_window_median_ms"] for t in rows)
        c = statistics.median(t[m]["cpu_s"] - t["bare"]["cpu_s"] for t in rows)
        w = statistics.median(t[m]["wall_s"] / t["bare"]["wall_s"] for t in rows)
        out[f"{m}_after_window_ratio"], out[f"{m}_extra_cpu_s"], out[f"{m}_wall_ratio"] = r, c, w
        print(f"  --analysis {m:5s}: after the window {r:.3f}x, whole run {w:.2f}x wall, +{c:.1f} CPU-s")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
