"""Data parallelism through torch.distributed: DDP or FSDP (full shard), launched by torchrun.

Never a home-made launcher or transport: `trainprof run --nproc N` runs
`python -m torch.distributed.run --standalone --nproc-per-node N -m trainprof run ...`, and a
multi-node job is the same command under the user's own torchrun (docs/distributed.md).
NCCL on GPUs, gloo on CPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import torch
from torch.utils.data import Sampler

from trainprof.bounded import env_int

STRATEGIES = ("ddp", "fsdp")  # over every rank; tp and pp: workload/layout_flags.py


@dataclass(frozen=True)
class DistInfo:
    rank: int
    local_rank: int
    world_size: int
    backend: str
    threads: dict[int, str] = field(default_factory=dict)
    """{gloo worker thread: the default group's name} (workload/mesh.py): a layout's trace metadata"""

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def from_env() -> DistInfo | None:
    """The process group torchrun described in the environment, initialised; None when alone."""
    world = env_int("WORLD_SIZE", 1)
    if world <= 1:
        return None
    import torch.distributed as dist

    from trainprof.backends.cuda_state import collective_backend

    from trainprof.workload.mesh import ThreadWatch, group_threads

    backend = collective_backend()
    threads: dict[int, str] = {}
    if not dist.is_initialized():
        with ThreadWatch() as w:  # reads /proc/self/task twice: free beside the rendezvous
            dist.init_process_group(backend=backend)
        threads = group_threads(w.new, [dist.group.WORLD])
    return DistInfo(dist.get_rank(), env_int("LOCAL_RANK", 0), dist.get_world_size(), backend, threads)


def local_device(info: DistInfo | None, requested: str) -> str:
    """Each rank takes the GPU of its local rank (torchrun's LOCAL_RANK)."""
    if info is not None and requested.startswith("cuda"):
        return f"cuda:{info.local_rank}"
    return requested


def wrap(model: torch.nn.Module, strategy: str, info: DistInfo, device: str) -> torch.nn.Module:
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        ids = [torch.device(device).index] if device.startswith("cuda") else None
        return DDP(model, device_ids=ids)
    if strategy == "fsdp":
        from torch.distributed.fsdp import fully_shard

        # FSDP2: shard each block, then the root (embeddings, tied head, final norm), so a
        # block's parameters are gathered only while it runs.
        for block in model.blocks:  # type: ignore[attr-defined]
            fully_shard(block)
        fully_shard(model)
        return model
    raise ValueError(f"unknown strategy {strategy!r}")


class RankSlice(Sampler[int]):
    """Rank r of W takes samples [s·G + r·m, s·G + (r+1)·m) of global batch s (G = m·W), so
    the job sees exactly the batches one process with micro-batch G would see."""

    def __init__(self, n_global_batches: int, micro_batch: int, info: DistInfo, start: int = 0) -> None:
        self.n, self.m, self.info, self.start = n_global_batches, micro_batch, info, start

    def __len__(self) -> int:
        return (self.n - self.start) * self.m

    def __iter__(self) -> Iterator[int]:
        g = self.m * self.info.world_size
        for s in range(self.start, self.n):
            start = s * g + self.info.rank * self.m
            yield from range(start, start + self.m)


def mean_across_ranks(x: torch.Tensor) -> torch.Tensor:
    """The global-batch mean of a per-rank mean (equal micro-batches on every rank)."""
    import torch.distributed as dist

    y = x.detach().clone()
    dist.all_reduce(y, op=dist.ReduceOp.SUM)
    return y / dist.get_world_size()


def gather(obj: Any) -> list[Any]:
    """Every rank's object, in rank order (on every rank)."""
    import torch.distributed as dist

    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def finish() -> None:
    from trainprof.backends.distributed import end_process_group

    end_process_group()
