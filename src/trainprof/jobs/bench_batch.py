"""`trainprof bench batch`: tokens/s of the reference workload per micro-batch, powers of two,
up to the memory limit (issue #41; the seed's batch-size sweep).

Each micro-batch is a fresh `trainprof run` process (jobs/trial.py: its peak memory is its own,
an out-of-memory ends one child, and the row's command is its exact reproduction). The sweep
stops at the limit:
* GPU: the first micro-batch that does not fit (the run's out-of-memory error);
* CPU: the planner's largest micro-batch under `--memory-budget` (analysis/plan: what `trainprof
  plan` answers; a CPU has no allocator to fail before the machine swaps), and a run the kernel
  killed (SIGKILL: the OOM killer) ends it too;
* either: `--max-micro-batch`, or a run that failed for another reason (its line is kept).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainprof.backends import DeviceBackend
from trainprof.bench import Progress
from trainprof.bench.workload_config import BatchSweepConfig
from trainprof.workload.config import TrainConfig

VERSION = 1
BUDGET_SHARE = 0.5  # CPU default budget: half of MemAvailable, room for the OS and other users' work


def run_argv(cfg: TrainConfig, folder: Path, extra: tuple[str, ...] = ()) -> list[str]:
    """`trainprof run` of `cfg` into `folder`/run: no system sampler (a thread on the cores it
    measures), no report (time and nothing read)."""
    from trainprof.tune.reference import to_argv

    return [sys.executable, "-m", "trainprof", "run", *to_argv(cfg), *extra, "--out", str(folder / "run"),
            "--json", "--system-interval", "0", "--no-report"]


def planned_bytes(cfg: TrainConfig, kind: str) -> int:
    from trainprof.jobs.plan_check import CPU_RUNTIME_BYTES, estimate

    return int(estimate(cfg, kind, CPU_RUNTIME_BYTES if kind == "cpu" else 0)["peak_bytes"])


def plan_limit(cfg: TrainConfig, kind: str, budget: int) -> int:
    """The planner's largest micro-batch within `budget` (0: not even one sequence): `trainprof
    plan`'s answer for this configuration on one process."""
    from trainprof.analysis.plan.memory import Runtime
    from trainprof.analysis.plan.search import max_micro_batch
    from trainprof.jobs.plan_check import CPU_RUNTIME_BYTES, plan_inputs

    shape, lay, _ = plan_inputs(cfg)
    runtime = Runtime(context_bytes=CPU_RUNTIME_BYTES if kind == "cpu" else 0, device_kind=kind)
    # foreach AdamW's full-size temporary counted: for another optimizer the limit errs low
    return max_micro_batch(shape, lay, runtime, budget)


def _is_oom(reason: str, returncode: int | None) -> bool:
    # the run's ResourceError (trainer._oom_error), or the kernel's OOM killer (SIGKILL)
    return "does not fit in" in reason or returncode == -9


def run(cfg: BatchSweepConfig, backend: DeviceBackend, progress: Progress | None = None) -> dict[str, Any]:
    from trainprof.jobs.trial import run_command
    from trainprof.recordtypes.run import load_run
    from trainprof.tune.reference import command

    from trainprof.workload.setup import resolve_dtype

    kind = "cuda" if backend.kind == "cuda" else "cpu"
    base = replace(cfg.train, device=backend.device).resolved()
    base = replace(base, dtype=resolve_dtype(base, base.device))  # the plan needs the dtype the run will use
    budget = limit_mb = None
    if kind == "cpu":
        budget = cfg.memory_budget or int(BUDGET_SHARE * (backend.available_memory_bytes() or 0)) or None
        limit_mb = plan_limit(base, kind, budget) if budget else None
    sizes = cfg.sizes()
    rows: list[dict[str, Any]] = []
    stop: dict[str, Any] = {"by": "max_micro_batch", "micro_batch": cfg.max_micro_batch,
                            "reason": f"--max-micro-batch {cfg.max_micro_batch} reached"}
    for i, b in enumerate(sizes):
        train = replace(base, micro_batch=b)
        planned = planned_bytes(train, kind)
        if limit_mb is not None and b > limit_mb:
            stop = {"by": "plan", "micro_batch": b, "planned_bytes": planned,
                    "reason": f"micro-batch {b} would need {planned / 2**20:,.0f} MiB by the plan, over the "
                    f"{budget / 2**20:,.0f} MiB budget (the planner's largest micro-batch: {limit_mb})"}
            break
        if progress:
            progress(i, len(sizes), f"micro-batch {b}")
        out = run_command(lambda folder, t=train: run_argv(t, folder), lambda folder: load_run(folder / "run" / "run.json"),
                          timeout_s=cfg.timeout_s)
        if out.status != "ok":
            oom = _is_oom(out.reason, out.returncode)
            stop = {"by": "oom" if oom else "failed", "micro_batch": b, "planned_bytes": planned,
                    "reason": (f"micro-batch {b} did not fit: " if oom else f"micro-batch {b} failed: ")
                    + out.reason.removeprefix("trainprof: error: ")}
            break
        s = out.record.summary
        rows.append({"micro_batch": b, "tokens_per_step": s.tokens_per_step, "step_time_s": s.step_time_s,
                     "step_time_median_s": s.step_time_median_s, "tokens_per_s": s.tokens_per_s, "mfu": s.mfu,
                     "peak_memory_bytes": s.peak_memory_bytes, "peak_memory_kind": s.peak_memory_kind,
                     "planned_bytes": planned,
                     "measured_steps": s.measured_steps, "wall_s": out.wall_s, "command": command(train)})
    best = max(rows, key=lambda r: r["tokens_per_s"]) if rows else None
    return {"results": rows, "stop": stop, "memory_budget_bytes": budget, "plan_limit": limit_mb,
            "best": {"micro_batch": best["micro_batch"], "tokens_per_s": best["tokens_per_s"]} if best else {}}
