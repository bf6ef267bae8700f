"""Run the per-rank analysis of a job on an engine: a local process pool or Ray tasks.

Both map a function over the job's rank traces and return the results in input order; the
function never raises for a bad trace (it returns the error as data, see
jobs/analyze.py: analyze_source), so one unreadable rank among 1,000 costs that rank, not the job.
Only the small per-rank summary (~15 KB of JSON) travels back; the trace is read and
dropped inside the worker. The job-level reduce (stragglers, skew, findings) runs on the
driver over those summaries (jobs/analyze.py: reduce_job): pure functions, the same for both engines.

local: a process pool of --jobs workers (default: the machine's cores). Each worker holds one
trace at a time, so at most --jobs traces are in memory (~2x a trace's JSON size each:
docs/scale.md).
ray:   one Ray task per rank trace (1 CPU each), reading its trace from storage itself (a
local path every node sees, or an fsspec URL such as s3://...), so the driver never touches
trace bytes. Without --ray-address a local Ray instance with --jobs CPUs is started for the
command and stopped after it; with one, the command joins that cluster, whose workers need
trainprof (and s3fs/gcsfs for those URLs) installed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from trainprof.errors import UsageError

ENGINES = ("local", "ray")


@dataclass(frozen=True)
class EngineConfig:
    """How to run a job's per-rank analyses (CLI: --engine, --jobs, --ray-address)."""

    engine: str = "local"
    """local (process pool) or ray."""
    jobs: int | None = None
    """local: worker processes; ray without an address: CPUs of the local Ray instance. None: all cores."""
    ray_address: str | None = None
    """An existing Ray cluster to join ("auto", "HOST:PORT", "ray://HOST:10001"); ray engine only."""

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise UsageError(f"--engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.jobs is not None and self.jobs < 1:
            raise UsageError(f"--jobs must be ≥ 1, got {self.jobs}")
        if self.ray_address is not None and self.engine != "ray":
            raise UsageError("--ray-address needs --engine ray")


def run_map(fn: Callable[..., Any], args: Sequence[tuple], cfg: EngineConfig) -> list[Any]:
    """[fn(*a) for a in args], on the configured engine, in input order."""
    if not args:
        return []
    if cfg.engine == "ray":
        return _ray(fn, args, cfg)
    return _local(fn, args, cfg)


def _local(fn: Callable[..., Any], args: Sequence[tuple], cfg: EngineConfig) -> list[Any]:
    jobs = min(len(args), cfg.jobs or os.cpu_count() or 1)
    if jobs == 1:
        return [fn(*a) for a in args]
    import multiprocessing
    import sys
    from concurrent.futures import ProcessPoolExecutor

    # fork is cheapest, but a process that has already run torch holds OpenMP/intra-op
    # thread pools that a forked child inherits locked: its first matmul (the CPU roof of a
    # CPU trace, backends/cpu.py) then waits forever. `trainprof analyze` imports no torch
    # (tests/integration/test_analyze_imports.py); an embedding program (a notebook, a test
    # runner) may have, and then its workers start from a clean forkserver process.
    method = "forkserver" if "torch" in sys.modules else "fork"
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(method)) as pool:
        return list(pool.map(fn, *zip(*args)))


def _ray(fn: Callable[..., Any], args: Sequence[tuple], cfg: EngineConfig) -> list[Any]:
    try:
        import ray
    except ImportError:
        raise UsageError("--engine ray needs Ray: pip install 'trainprof[cluster]'") from None
    import logging

    started = not ray.is_initialized()
    if started:
        # Ray sets OMP_NUM_THREADS=1 in its workers; the CPU roofs measured for a CPU-only trace
        # (backends/cpu.py, cached per thread count) must be those the local engine uses.
        threads = os.environ.get("OMP_NUM_THREADS") or str(os.cpu_count() or 1)
        common = {"logging_level": logging.ERROR, "log_to_driver": False, "configure_logging": True,
                  "runtime_env": {"env_vars": {"OMP_NUM_THREADS": threads}}}
        try:
            if cfg.ray_address:
                ray.init(address=cfg.ray_address, **common)
            else:  # a private local instance on the loopback interface, for this command only
                ray.init(num_cpus=cfg.jobs or os.cpu_count() or 1, include_dashboard=False,
                         _node_ip_address="127.0.0.1", **common)
        except (ConnectionError, RuntimeError, ValueError) as e:
            where = f"the Ray cluster at {cfg.ray_address}" if cfg.ray_address else "a local Ray instance"
            raise UsageError(f"--engine ray: cannot start or join {where} ({type(e).__name__}: {e})") from None
    try:
        # max_retries=0: the task returns errors as data; a retry would only re-read a bad trace.
        task = ray.remote(num_cpus=1, max_retries=0)(fn)
        return ray.get([task.remote(*a) for a in args])
    finally:
        if started:
            ray.shutdown()
