"""`trainprof bench batch`: tokens/s of the reference workload per micro-batch, powers of two,
up to the memory limit (issue #41; the seed's batch-size sweep).

Each micro-batch trains in a fresh process (jobs/trial.run_function: its peak memory is its own,
an out-of-memory ends one child), forked from the forkserver `trainprof memory`'s probes use,
which has imported torch and the trainer once (measured: a `trainprof run` process took 7.6 s
for 3 steps of micro-batch 8 on the loaded 2-core sandbox, 3.2 s of it `import torch`). The
row's `command` is the `trainprof run` line that reproduces it. The sweep stops at the limit:
* GPU: the first micro-batch that does not fit (the run's out-of-memory error);
* CPU: the planner's largest micro-batch under `--memory-budget` (analysis/plan: what `trainprof
  plan` answers; a CPU has no allocator to fail before the machine swaps), and a run the kernel
  killed (SIGKILL: the OOM killer) ends it too;
* either: `--max-micro-batch`, or a run that failed for another reason (its line is kept).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainprof.backends import DeviceBackend
from trainprof.bench import Progress
from trainprof.bench.workload_config import BatchSweepConfig
from trainprof.workload.config import TrainConfig

VERSION = 1
BUDGET_SHARE = 0.5  # CPU default budget: half of MemAvailable, room for the OS and other users' work


SUMMARY = ("tokens_per_step", "step_time_s", "step_time_median_s", "tokens_per_s", "mfu", "peak_memory_bytes",
           "peak_memory_kind", "measured_steps")


def _child(conn: Any, cfg: TrainConfig) -> None:
    """In the forked child: train `cfg`, send the summary's fields (or why not)."""
    try:
        from trainprof.workload.trainer import train

        s = train(cfg).summary
        # its CPU time: a forkserver's child is not ours to wait for, so bench/contention.py would
        # count it as another process's (cli/bench.py subtracts `peer_cpu_s`)
        conn.send({"status": "ok", **{k: getattr(s, k) for k in SUMMARY}, "cpu_s": time.process_time()})
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which decides
        from trainprof.errors import ResourceError

        conn.send({"status": "oom" if isinstance(e, ResourceError) else "error", "reason": f"{e}"})
    finally:
        conn.close()


def measure(cfg: TrainConfig, timeout_s: float) -> tuple[dict[str, Any], float]:
    """One micro-batch in a child: (its summary fields, or status oom/error with a reason; wall s)."""
    from trainprof.jobs.memory_probe import _context
    from trainprof.jobs.trial import run_function

    out = run_function(_child, (cfg,), timeout_s=timeout_s, context=_context())
    if out.status == "ok":
        return out.record, out.wall_s
    if out.returncode == -9:  # the kernel's OOM killer
        return {"status": "oom", "reason": "killed by SIGKILL (the kernel's OOM killer?)"}, out.wall_s
    return {"status": "error", "reason": out.reason}, out.wall_s


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


def run(cfg: BatchSweepConfig, backend: DeviceBackend, progress: Progress | None = None) -> dict[str, Any]:
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
    cpu_s = 0.0
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
        got, wall = measure(train, cfg.timeout_s)
        cpu_s += got.get("cpu_s", 0.0)
        if got["status"] != "ok":
            oom = got["status"] == "oom"
            stop = {"by": "oom" if oom else "failed", "micro_batch": b, "planned_bytes": planned,
                    "reason": (f"micro-batch {b} did not fit: " if oom else f"micro-batch {b} failed: ") + got["reason"]}
            break
        rows.append({"micro_batch": b, **{k: got[k] for k in SUMMARY if k != "measured_steps"}, "planned_bytes": planned,
                     "measured_steps": got["measured_steps"], "wall_s": wall, "command": command(train)})
    best = max(rows, key=lambda r: r["tokens_per_s"]) if rows else None
    return {"results": rows, "stop": stop, "memory_budget_bytes": budget, "plan_limit": limit_mb, "peer_cpu_s": cpu_s,
            "best": {"micro_batch": best["micro_batch"], "tokens_per_s": best["tokens_per_s"]} if best else {}}
