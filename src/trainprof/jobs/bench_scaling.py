"""`trainprof bench scaling --nproc 1,2,4`: does data parallelism pay on this machine? (issue #41;
the seed's cost-effectiveness of data parallelism.)

Each rank count N > 1 is one `trainprof run --nproc N` job (torchrun through jobs/torchrun.py,
never a launcher of ours; gloo on CPU, NCCL on GPUs), one rank the same trainer in a warm forked
child (jobs/bench_batch.measure: no torch import to pay), all with the same per-rank micro-batch (weak scaling),
its profiled steps recorded on every rank. Per count: the job's tokens/s (run.json
`distributed.job_tokens_per_s`: one rank's × N), efficiency against one rank, and the
collectives' share of a step that explains what is lost (analysis/run/scaling.py).

On CPU every rank gets the same intra-op threads at every count (cores ÷ the largest count),
as every rank gets one GPU: otherwise one rank would have all the cores and N ranks a share
each, and the efficiency would measure the thread split, not data parallelism.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainprof.backends import DeviceBackend
from trainprof.bench import Progress
from trainprof.bench.workload_config import ScalingConfig

VERSION = 1
# a row's columns in this order (the report's table shows the first 14: the command is last)
COLUMNS = ("nproc", "tokens_per_step", "step_time_s", "rank_tokens_per_s", "job_tokens_per_s", "efficiency", "lost_s",
           "comm_share", "exposed_share", "explained_by_comm", "collectives_per_step", "allreduce_bytes_per_step",
           "straggler_excess_pct", "wall_s", "command")


def _read(folder: Path) -> tuple[Any, Any]:
    from trainprof.recordtypes.analysis import Analysis
    from trainprof.recordtypes.base import load
    from trainprof.recordtypes.run import load_run

    run = folder / "run"
    analysis = load(run / "analysis.json", Analysis) if (run / "analysis.json").is_file() else None
    return load_run(run / "run.json"), analysis


def _comm(analysis: Any) -> dict[str, Any] | None:
    """The collectives' shares from every rank's profiled steps (host step times on CPU)."""
    from trainprof.analysis.run.scaling import job_comm, rank_comm

    if analysis is None:
        return None
    multi = analysis.multi_rank or None
    step_us = {r.rank: r.step_time_us for r in (multi.per_rank if multi else [])}
    return job_comm([rank_comm(r.collectives or None, r.step_time_us or step_us.get(r.rank))
                     for r in analysis.ranks])


def run(cfg: ScalingConfig, backend: DeviceBackend, progress: Progress | None = None) -> dict[str, Any]:
    from trainprof.analysis.run.scaling import scaling_rows
    from trainprof.jobs.bench_batch import measure, run_argv
    from trainprof.jobs.trial import run_command
    from trainprof.tune.reference import command

    cpu = backend.kind != "cuda"
    cores = os.cpu_count() or 1
    threads = cfg.train.threads or (max(1, cores // max(cfg.nproc)) if cpu else None)
    train = replace(cfg.train, device="cpu" if cpu else "cuda", threads=threads).resolved()
    rows, failed, params, cpu_s = [], None, None, 0.0
    for i, n in enumerate(cfg.nproc):
        if progress:
            progress(i, len(cfg.nproc), f"{n} rank{'s' if n > 1 else ''}")
        if n == 1:  # one rank: the trainer in a warm forked child (jobs/bench_batch.measure), as `trainprof run`
            got, wall = measure(train, cfg.timeout_s)
            cpu_s += got.get("cpu_s", 0.0)
            if got["status"] != "ok":
                failed = {"nproc": n, "reason": got["reason"]}
                break
            rows.append({"nproc": 1, "tokens_per_step": got["tokens_per_step"], "step_time_s": got["step_time_s"],
                         "rank_tokens_per_s": got["tokens_per_s"], "job_tokens_per_s": got["tokens_per_s"],
                         "straggler_excess_pct": None, "comm_share": 0.0, "exposed_share": 0.0,
                         "collectives_per_step": None, "allreduce_bytes_per_step": None, "wall_s": wall,
                         "command": command(train)})
            continue
        extra = ("--nproc", str(n), "--profile", "--profile-steps", str(cfg.profile_steps))
        out = run_command(lambda folder, e=extra: run_argv(train, folder, e), _read, timeout_s=cfg.timeout_s)
        if out.status != "ok":
            failed = {"nproc": n, "reason": out.reason.removeprefix("trainprof: error: ")}
            break
        rec, analysis = out.record
        params = rec.model.get("params")
        s, dist = rec.summary, rec.distributed
        comm = _comm(analysis) or {}
        rows.append({"nproc": n, "tokens_per_step": s.tokens_per_step,
                     "step_time_s": s.step_time_s, "rank_tokens_per_s": s.tokens_per_s,
                     "job_tokens_per_s": dist.job_tokens_per_s if dist else s.tokens_per_s,
                     "straggler_excess_pct": dist.straggler_excess_pct if dist else None,
                     "comm_share": comm.get("comm_share"), "exposed_share": comm.get("exposed_share"),
                     "collectives_per_step": comm.get("collectives_per_step"),
                     "allreduce_bytes_per_step": comm.get("allreduce_bytes_per_step"),
                     "wall_s": out.wall_s,
                     "command": command(train) + f" --nproc {n}"})
    rows = [{k: r[k] for k in COLUMNS} for r in scaling_rows(rows)]
    notes = []
    if cpu and max(cfg.nproc) * threads > cores:
        notes.append(f"{max(cfg.nproc)} ranks × {threads} threads on {cores} cores: the ranks share cores, so the "
                     "efficiency measures that sharing too")
    return {"results": rows, "threads_per_rank": threads, "params": params, "peer_cpu_s": cpu_s,
            **({"failed": failed} if failed else {}), "notes": notes}
