"""Multi-dimensional layouts (data × tensor × pipeline parallel) through a DeviceMesh.

The mesh's dimensions are named after their axis (`pp`, `dp`, `tp`, outer to inner: tensor
parallel on neighbouring ranks, as torchtitan and Megatron-LM order them, since it talks the
most), so every process group DeviceMesh creates carries the axis in its description
(`mesh_<name>` in torch 2.13) and trainprof's trace analysis can read it back
(analysis/job/axes.py).

gloo traces (torch 2.13) record no process group on a collective: each `gloo:<op>` runs on
a worker thread of its process group. `thread_groups` records which group's workers each
thread is, and the layout and that map go into the trace's metadata (`trainprof_mesh`,
through torch.profiler's add_metadata_json), so the analysis can put each gloo collective
in its group (docs/distributed.md).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

AXES = ("pp", "dp", "tp")  # outer to inner
SCHEDULES = ("gpipe", "1f1b")


@dataclass(frozen=True)
class Layout:
    dp: int = 1
    """data-parallel replicas (gradients averaged over the `dp` groups)"""
    tp: int = 1
    """tensor-parallel ranks per block (column/row-wise attention and MLP)"""
    pp: int = 1
    """pipeline stages (blocks split evenly)"""
    schedule: str = "gpipe"
    """pipeline schedule: gpipe | 1f1b"""
    microbatches: int = 4
    """pipeline micro-batches per step (m; the bubble is (p−1)/(m+p−1))"""

    @property
    def world(self) -> int:
        return self.dp * self.tp * self.pp

    def dims(self) -> list[tuple[str, int]]:
        """The mesh's dimensions, outer to inner (size-1 axes left out; at least one)."""
        d = [(a, getattr(self, a)) for a in AXES if getattr(self, a) > 1]
        return d or [("dp", 1)]

    def validate(self, world: int, n_layer: int, n_head: int) -> None:
        if self.world != world:
            raise ValueError(f"dp × tp × pp = {self.world} must equal the world size {world}")
        if n_head % self.tp:
            raise ValueError(f"--tp {self.tp} must divide the {n_head} attention heads")
        if n_layer % self.pp:
            raise ValueError(f"--pp {self.pp} must divide the {n_layer} blocks")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}")


def _tasks() -> set[int]:
    """This process's threads but gloo's transport loops (`gloo_tcp_loop`, one per device
    context, measured on torch 2.13): the rest a group's creation starts are its workers."""
    out = set()
    try:
        for t in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{t}/comm") as f:
                if "tcp_loop" not in f.read():
                    out.add(int(t))
    except OSError:  # not Linux: no thread map (the analysis then says the groups are unknown)
        return set()
    return out


class ThreadWatch:
    """The threads a block of code started (Linux: /proc/self/task)."""

    def __enter__(self) -> "ThreadWatch":
        self.before = _tasks()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.new = sorted(_tasks() - self.before)


def group_threads(new: list[int], groups: list[Any]) -> dict[int, str]:
    """{thread id: group name}: gloo starts its worker threads (`threads` each, 2 by
    default) in each group's constructor, so the threads started while the groups were
    created, in order, fall to the groups in creation order, an equal share each (a count
    that does not divide evenly gives no map: better none than a wrong one)."""
    if not groups or not new or len(new) % len(groups):
        return {}
    k = len(new) // len(groups)
    return {tid: groups[i // k].group_name for i, tid in enumerate(new)}


def init_default(backend: str) -> dict[int, str]:
    """init_process_group; {its gloo worker threads: the default group's name}."""
    import torch.distributed as dist

    with ThreadWatch() as w:
        dist.init_process_group(backend=backend)
    return group_threads(w.new, [dist.group.WORLD])


def make_mesh(layout: Layout, device_type: str) -> tuple[Any, dict[int, str]]:
    """(DeviceMesh with named dims, {gloo worker thread: group name} of the groups it created;
    a dimension spanning the whole world reuses the default group, created earlier)."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    dims = layout.dims()
    with ThreadWatch() as w:
        mesh = init_device_mesh(device_type, tuple(n for _, n in dims), mesh_dim_names=tuple(a for a, _ in dims))
    world = dist.group.WORLD.group_name if dist.group.WORLD is not None else None
    groups = [g for g in (mesh.get_group(a) for a, _ in dims) if g.group_name != world]
    return mesh, group_threads(w.new, groups)


def metadata(layout: Layout, threads: dict[int, str]) -> str:
    """The `trainprof_mesh` trace metadata (JSON): the layout and the gloo thread map."""
    return json.dumps({"dims": [[a, n] for a, n in layout.dims()], "schedule": layout.schedule,
                       "microbatches": layout.microbatches,
                       "threads": {str(t): g for t, g in sorted(threads.items())}})
