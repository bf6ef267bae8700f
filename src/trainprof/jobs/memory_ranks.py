"""Measure one configuration's per-rank peak on N gloo ranks of this machine (FSDP, DDP).

Each rank is a memory probe (jobs/memory_probe.py: a fresh child of the warm forkserver,
glibc's 64 KiB mmap threshold, a baseline before the model, the high-water mark after),
given torchrun's environment contract (MASTER_ADDR/PORT, RANK, LOCAL_RANK, WORLD_SIZE) so
`trainer.train` joins the same process group `trainprof run --nproc N --strategy fsdp` makes
under torchrun (workload/parallel.py). Not torchrun itself: its agent and N fresh
interpreters cost ~3 s a rank on 2 cores; the forkserver's children start in ~0.1 s.

The process group is made before the baseline (its gloo buffers are part of the process,
like NCCL's outside the planner's model states), with a short timeout so a rank that dies
ends its peers' collectives in seconds, not gloo's default 30 minutes. Each rank takes
cores / N intra-op threads: N ranks × all cores would measure the oversubscription's time.
"""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from datetime import timedelta
from typing import Any

from trainprof.jobs.memory_probe import ProbeResult, _child, _context, probe_result

PG_TIMEOUT_S = 60.0


def run_rank_probe(config: Any, ranks: int, *, limit_bytes: int | None, timeout_s: float = 600.0) -> ProbeResult:
    """`config` (resolved, CPU) on `ranks` gloo ranks at once; the result is the rank with the
    highest peak above its baseline (every rank's in `ranks_above_baseline_bytes`). Any rank
    out of memory: oom; any error: error (its reason)."""
    from trainprof.jobs.torchrun import free_port
    from trainprof.jobs.trial import run_function

    port = free_port("127.0.0.1")
    threads = max(1, (os.cpu_count() or 1) // ranks)
    out: list[Any] = [None] * ranks

    def one(rank: int) -> None:
        out[rank] = run_function(_rank_child, (config, limit_bytes, rank, ranks, port, threads),
                                 timeout_s=timeout_s, context=_context())

    workers = [threading.Thread(target=one, args=(r,), daemon=True) for r in range(ranks)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    results = [probe_result(config, o) for o in out]
    return combine(config, results)


def combine(config: Any, results: list[ProbeResult]) -> ProbeResult:
    """The ranks' probes as one: errors first, then OOMs, else the highest peak above baseline."""
    for status in ("error", "oom"):
        bad = [(i, r) for i, r in enumerate(results) if r.status == status]
        if bad:
            i, r = bad[0]
            return replace(r, config=config, reason=f"rank {i}: {r.reason}",
                           ranks_above_baseline_bytes=tuple(x.above_baseline_bytes for x in results))
    top = max(results, key=lambda r: r.above_baseline_bytes or 0)
    return replace(top, config=config, wall_s=max(r.wall_s for r in results),
                   cpu_s=sum(r.cpu_s or 0.0 for r in results),
                   ranks_above_baseline_bytes=tuple(r.above_baseline_bytes for r in results))


def _rank_child(conn: Any, config: Any, limit_bytes: int | None, rank: int, world: int, port: int,
                threads: int) -> None:
    import torch
    import torch.distributed as dist

    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                       "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(world)})
    torch.set_num_threads(threads)
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=PG_TIMEOUT_S))
    except Exception as e:  # noqa: BLE001 - reported to the parent, as a probe's error
        conn.send({"status": "error", "reason": f"process group: {type(e).__name__}: {e}"})
        conn.close()
        return
    _child(conn, config, limit_bytes)
