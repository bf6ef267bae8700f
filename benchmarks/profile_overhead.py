"""What `trainprof profile` costs the program it measures: the same loop bare and profiled.

Each trial runs benchmarks/profile_overhead_loop.py twice, in fresh processes, once as is and
once as `trainprof profile -- python profile_overhead_loop.py` (order alternating between
trials, so drift hits both); the loop times every step itself. Per trial and per stretch of
steps we take the ratio of the median step times, profiled / bare, and report the median of
those ratios over trials:

* after the window: every hook is off (the rest of a long job): the < 1% goal;
* measured: the agent's hooks, a synchronize and its bookkeeping on every step;
* warm-up: steps 0 .. W-2 (optimizer and backward hooks; step 1 also global module hooks);
* the FLOP-counted step (FlopCounterMode) and the profiled steps (torch.profiler): the
  profiler's own cost, which the tool also reports in run.json ("profiler_overhead_pct").

    python benchmarks/profile_overhead.py [--trials 5] [--steps 40] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

VERSION = 1
LOOP = Path(__file__).resolve().parent / "profile_overhead_loop.py"
WARMUP, STEPS, PROFILE = 2, 10, 2  # trainprof profile's defaults
WAIT_WARMUP = 2  # torch.profiler's wait + warm-up steps before the recorded ones (collect/profiler.py)


def stretches(n: int) -> dict[str, range]:
    first_after = WARMUP + STEPS + WAIT_WARMUP + PROFILE
    return {"warm-up": range(0, WARMUP - 1), "FLOP-counted": range(WARMUP - 1, WARMUP),
            "measured": range(WARMUP, WARMUP + STEPS),
            "profiled": range(WARMUP + STEPS + WAIT_WARMUP, first_after),
            "after the window": range(first_after, n)}


def run(loop_args: list[str], profiled: bool, work: Path) -> tuple[list[float], float]:
    times = work / f"times_{'p' if profiled else 'b'}.json"
    cmd = [sys.executable, str(LOOP), *loop_args, "--times", str(times)]
    if profiled:
        out = work / "prof"
        cmd = [sys.executable, "-m", "trainprof", "profile", "--out", str(out), "--force", "--no-report", "--", *cmd]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    return json.loads(times.read_text()), wall


def hook_cost(n: int, reps: int) -> dict[str, float]:
    """The agent's own cost per step, in this process: a loop whose step is a Linear(4, 4)
    (tens of µs: the cost is not hidden in compute) timed bare, then with an agent measuring
    every step (hooks, marks, the record), then after that agent's window (no hooks);
    alternating `reps` times, a fresh agent each time."""
    import atexit

    import torch

    from trainprof.inject import package_dir
    from trainprof.inject.agent import Agent
    from trainprof.inject.options import AgentConfig, ProfileOptions
    from trainprof.options import MonitorOptions

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(2, 4)

    def loop(k: int) -> float:
        t0 = time.perf_counter()
        for _ in range(k):
            loss = model(x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return (time.perf_counter() - t0) / k

    loop(500)
    bare, armed, measured, after = [], [], [], []
    opts = ProfileOptions(warmup=2, steps=n + 1, monitor=MonitorOptions(profile_steps=0, system_interval=0))
    for _ in range(reps):
        bare.append(loop(n))
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / ".parts").mkdir()
            agent = Agent(AgentConfig(opts, str(Path(tmp) / ".parts"), str(package_dir())))
            agent.install()
            agent._boundary = lambda: None  # armed, never claiming: the hooks of the steps before the window
            try:
                armed.append(loop(n))
            finally:
                atexit.unregister(agent._at_exit)
                agent.uninstall()
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / ".parts").mkdir()
            agent = Agent(AgentConfig(opts, str(Path(tmp) / ".parts"), str(package_dir()),
                                      pythonpath=os.environ.get("PYTHONPATH")))
            agent.install()
            try:
                loop(2)  # step 0 claims, step 1 finds the root module and counts FLOPs
                measured.append(loop(n))  # steps 2 .. n+1, each measured
                # the window ends at the step boundary after the last measured step (the record is
                # written, hooks off): one or two more steps, as the agent counts its boundaries
                for _ in range(3):
                    loop(1)
                    if agent.state != "measuring":
                        break
                assert agent.state == "done", (agent.state, agent.error)
            finally:
                atexit.unregister(agent._at_exit)
                agent.uninstall()
        after.append(loop(n))
    b = statistics.median(bare)
    return {"step_us_bare": 1e6 * b, "step_us_armed": 1e6 * statistics.median(armed),
            "agent_us_per_armed_step": 1e6 * (statistics.median(armed) - b),
            "step_us_measured": 1e6 * statistics.median(measured),
            "agent_us_per_measured_step": 1e6 * (statistics.median(measured) - b),
            "step_us_after_window": 1e6 * statistics.median(after),
            "after_window_over_bare": statistics.median(after) / b}


def main() -> int:
    from _common import environment, write_json

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40, help="steps of the loop (the window takes 16)")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--hook-steps", type=int, default=2000, help="steps per trial of the agent-alone loop")
    ap.add_argument("--skip-processes", action="store_true", help="only the agent-alone measurement")
    ap.add_argument("--out", default="benchmarks/results/profile_overhead.json")
    a = ap.parse_args()
    loop_args = ["--steps", str(a.steps), "--preset", a.preset, "--micro-batch", str(a.micro_batch),
                 "--seq-len", str(a.seq_len), "--threads", str(a.threads)]
    parts = stretches(a.steps)
    ratios: dict[str, list[float]] = {k: [] for k in parts}
    medians: dict[str, dict[str, list[float]]] = {k: {"bare": [], "profiled": []} for k in parts}
    walls: dict[str, list[float]] = {"bare": [], "profiled": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for trial in range(0 if a.skip_processes else a.trials):
            got = {}
            for profiled in ((False, True) if trial % 2 == 0 else (True, False)):
                got[profiled], wall = run(loop_args, profiled, work)
                walls["profiled" if profiled else "bare"].append(wall)
            for name, idx in parts.items():
                if not idx:
                    continue
                b = statistics.median(got[False][i] for i in idx)
                p = statistics.median(got[True][i] for i in idx)
                medians[name]["bare"].append(b)
                medians[name]["profiled"].append(p)
                ratios[name].append(p / b)
            print(f"trial {trial + 1}/{a.trials}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in ratios.items() if v),
                  flush=True)
    cost = hook_cost(a.hook_steps, a.trials)
    env = environment("cpu")
    result = {"benchmark": "profile_overhead", "version": VERSION, "env": env, "config": vars(a),
              "load_average_1min": os.getloadavg()[0],
              "stretches": {k: {"steps": [r.start, r.stop - 1] if r else None,
                                "step_s_bare_median": statistics.median(medians[k]["bare"]) if ratios[k] else None,
                                "step_s_profiled_median": statistics.median(medians[k]["profiled"]) if ratios[k] else None,
                                "ratio_median": statistics.median(ratios[k]) if ratios[k] else None,
                                "ratio_min": min(ratios[k], default=None), "ratio_max": max(ratios[k], default=None)}
                            for k, r in parts.items()},
              "process_wall_s_median": {k: statistics.median(v) if v else None for k, v in walls.items()},
              "agent_alone": cost}
    print(f"\n{a.preset} mb={a.micro_batch} T={a.seq_len}, {a.trials} trials x {a.steps} steps, "
          f"{a.threads or 'default'} threads; per-stretch median step time and profiled/bare ratio")
    print(f"{'stretch':18}{'steps':>9}{'bare ms':>10}{'profiled ms':>13}{'ratio':>9}{'min':>8}{'max':>8}")
    for k, s in result["stretches"].items():
        if s["ratio_median"] is None:
            continue
        print(f"{k:18}{'%d-%d' % tuple(s['steps']):>9}{1e3 * s['step_s_bare_median']:>10.2f}"
              f"{1e3 * s['step_s_profiled_median']:>13.2f}{s['ratio_median']:>9.4f}{s['ratio_min']:>8.4f}"
              f"{s['ratio_max']:>8.4f}")
    w = result["process_wall_s_median"]
    if w["bare"] is not None:
        print(f"process wall time, median: bare {w['bare']:.2f} s, profiled {w['profiled']:.2f} s "
              "(start-up, the window's extra work, the records and the analysis)")
    ref = result["stretches"]["measured"]["step_s_bare_median"]
    share = f" = {100 * cost['agent_us_per_measured_step'] / 1e6 / ref:.3f}% of the loop's {1e3 * ref:.1f} ms step" \
        if ref else ""
    print(f"the agent alone, Linear(4, 4) steps: bare {cost['step_us_bare']:.1f} µs; armed (before the window) "
          f"{cost['step_us_armed']:.1f} µs: {cost['agent_us_per_armed_step']:.1f} µs per step; measured "
          f"{cost['step_us_measured']:.1f} µs: {cost['agent_us_per_measured_step']:.1f} µs per measured step{share}; "
          f"after the window {cost['after_window_over_bare']:.3f}× bare")
    write_json(a.out, result)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
