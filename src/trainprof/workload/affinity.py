"""`trainprof run --bind-numa`: bind this rank to its NUMA-local cores before any work starts.

Called first thing in `train()`: before the process group (gloo and NCCL start threads), the
model and the DataLoader (its workers are forked and inherit the mask), and before PyTorch's
intra-op pool runs a parallel region (its threads are created then and inherit the mask).
Threads that exist already are moved too (backends/topology.py:set_affinity).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from trainprof.bounded import env_int
from trainprof.errors import UsageError


def local_rank() -> tuple[int, int]:
    """(local rank, local world size) from torchrun's environment; a lone process is 0 of 1."""
    return env_int("LOCAL_RANK", 0), env_int("LOCAL_WORLD_SIZE", 1)


def plan(device: str, local_world_size: int) -> list[Any]:
    """The binding of every local rank (hardware/numa.py:plan_binding) for a job on `device`.

    CPU ranks ignore the GPUs; `--device cuda:N` in a lone process binds to GPU N's node."""
    from trainprof.backends.topology import read_topology
    from trainprof.hardware.numa import plan_binding

    topo = read_topology()
    gpus = not device.startswith("cpu") and bool(topo.gpus)
    if gpus and local_world_size == 1 and device.startswith("cuda:"):
        index = int(device.split(":", 1)[1])
        topo = replace(topo, gpus=tuple(g for g in topo.gpus if g.index == index) or topo.gpus)
    return plan_binding(topo, local_world_size, use_gpus=gpus)


def bind_numa(device: str, threads: int | None) -> dict[str, Any]:
    """Apply this rank's binding; set the intra-op threads to its core count unless `threads`
    was given (PyTorch sized its pool from the mask it started with). Returns the record
    stored in run.json (environment.numa_binding)."""
    import torch

    from trainprof.backends.topology import set_affinity
    from trainprof.hardware.numa import format_cpulist

    if not hasattr(os, "sched_setaffinity"):
        raise UsageError("--bind-numa needs Linux (os.sched_setaffinity)")
    rank, world = local_rank()
    b = plan(device, world)[rank]
    set_affinity(b.cpus)
    if threads is None:
        torch.set_num_threads(len(b.cpus))
    return {"local_rank": rank, "local_world_size": world, "node": b.node, "cpus": format_cpulist(b.cpus),
            "gpu": b.gpu, "threads": torch.get_num_threads()}


def environment(binding: dict[str, Any] | None) -> dict[str, Any]:
    """For run.json's environment (and each rank's entry): the CPUs this process may run on,
    and the binding applied, if any."""
    from trainprof.backends.topology import current_affinity
    from trainprof.hardware.numa import format_cpulist

    out: dict[str, Any] = {"cpu_affinity": format_cpulist(current_affinity())}
    if binding is not None:
        out["numa_binding"] = binding
    return out
