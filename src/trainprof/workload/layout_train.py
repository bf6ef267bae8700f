"""Training steps of the reference GPT on a data × tensor × pipeline layout (workload/mesh.py).

One step on a global batch of G sequences: dp replica d takes rows [d·G/dp, (d+1)·G/dp);
under pipeline parallel its batch is cut into m micro-batches by the schedule; the tensor
parallel ranks of a replica see the same rows. After backward, the gradients of each replica
are averaged over its `dp` group in one flat all_reduce (a single DDP bucket: no overlap
with backward, which a CPU run does not need to show), the tied embedding/head gradients are
summed over the first and last stage, the gradients clipped to a global norm over the whole
layout (workload/clip.py: torch 2.13's clip_grad_norm_ cannot take it), and AdamW steps. The
loss is the global batch's mean, so the trajectory equals one process's on the same batches
(tested, tiny preset, clipping on every step).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from trainprof.workload import mesh as meshes
from trainprof.workload import clip, pipeline, tensor_parallel
from trainprof.workload.config import ModelConfig
from trainprof.workload.model import GPT


@dataclass(frozen=True)
class LayoutRun:
    model: ModelConfig
    layout: meshes.Layout
    global_batch: int = 8
    seq_len: int = 64
    steps: int = 3
    lr: float = 1e-3
    seed: int = 1337
    delay_stage: int = -1
    """a planted imbalance: this pipeline stage sleeps `delay_ms` per micro-batch forward"""
    delay_ms: float = 0.0
    grad_clip: float = 0.0
    """clip the gradients to this global norm (clip_grad_norm_'s max_norm; 0: off)"""


def batches(run: LayoutRun, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The global batch of `step` (the same on every rank and in one process)."""
    g = torch.Generator().manual_seed(run.seed * 1000 + step)
    t = torch.randint(0, run.model.vocab_size, (run.global_batch, run.seq_len + 1), generator=g)
    return t[:, :-1].contiguous(), t[:, 1:].contiguous()


def reference_losses(run: LayoutRun) -> list[float]:
    """The same steps in one process: what the layout's losses must equal."""
    torch.manual_seed(run.seed)
    model = GPT(run.model)
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr, betas=(0.9, 0.95), foreach=False)
    out = []
    for s in range(run.steps):
        x, y = batches(run, s)
        loss = model(x, y)
        loss.backward()
        if run.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), run.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        out.append(float(loss.detach()))
    return out


class Job:
    """One rank's part of the layout: mesh, model shard, optimizer, the groups it talks in."""

    def __init__(self, run: LayoutRun, default_threads: dict[int, str], *, gpt: GPT | None = None,
                 make_opt: Callable[[torch.nn.Module], torch.optim.Optimizer] | None = None,
                 device: str = "cpu") -> None:
        """`gpt`: the model to split (default: a fresh one, seeded with `run.seed`); `make_opt`:
        its optimizer over the rank's part (default: AdamW at `run.lr`), as `trainprof run` passes
        its own (workload/setup.py)."""
        import torch.distributed as dist

        lay = run.layout
        self.run, self.rank = run, dist.get_rank()
        lay.validate(dist.get_world_size(), run.model.n_layer, run.model.n_head)
        self.mesh, threads = meshes.make_mesh(lay, device.split(":")[0])
        self.threads = {**default_threads, **threads}
        names = self.mesh.mesh_dim_names
        coord = dict(zip(names, self.mesh.get_coordinate()))
        self.dp_index, self.tp_index, self.stage = coord.get("dp", 0), coord.get("tp", 0), coord.get("pp", 0)
        self.dp_group = self.mesh.get_group("dp") if lay.dp > 1 else None
        if gpt is None:
            torch.manual_seed(run.seed)
            gpt = GPT(run.model)
        if lay.tp > 1:
            tensor_parallel.parallelize(gpt, self.mesh["tp"])
        self.tied_group = None
        if lay.pp > 1:
            self.tied_group = self._tied_group(lay)
            self.module, self.schedule = pipeline.build(gpt, self.stage, lay.pp, self.mesh.get_group("pp"), device,
                                                        lay.microbatches, lay.schedule)
            if self.stage == run.delay_stage:
                self.module.delay_s = run.delay_ms / 1e3
        else:
            self.module, self.schedule = gpt, None
        # forloop: foreach cannot mix DTensor and plain tensors in one list
        self.opt = make_opt(self.module) if make_opt is not None else torch.optim.AdamW(
            self.module.parameters(), lr=run.lr, betas=(0.9, 0.95), foreach=False)

    def _tied_group(self, lay: meshes.Layout) -> Any:
        """The first and last stage of this rank's pipeline (every rank creates every group)."""
        import torch.distributed as dist

        if lay.pp == 2:
            return self.mesh.get_group("pp")
        grid = self.mesh.mesh.reshape(lay.pp, -1)  # pp is the outermost dimension
        mine = None
        for col in range(grid.shape[1]):
            ranks = [int(grid[0, col]), int(grid[-1, col])]
            g = dist.new_group(ranks, group_desc="pp_tied_embedding")
            if self.rank in ranks:
                mine = g
        return mine

    def replica_rows(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """This rank's replica's rows of a global batch."""
        rows = self.run.global_batch // self.run.layout.dp
        sl = slice(self.dp_index * rows, (self.dp_index + 1) * rows)
        return x[sl], y[sl]

    def pipelined(self, x: torch.Tensor, y: torch.Tensor,
                  phase: Callable[[str], Any] | None = None) -> torch.Tensor | None:
        """Forward and backward of the replica's batch through the pipeline schedule; the mean
        loss of its micro-batches on the last stage, else None. `phase`: the step's phase timer
        (each micro-batch's forward is `forward`, its backward `backward`, the rest of the
        schedule `pipeline`: pipeline.Split)."""
        losses: list[torch.Tensor] = []
        with pipeline.timed(self.module, phase):
            if self.module.first:
                self.schedule.step(x)
            elif self.module.last:
                self.schedule.step(target=y, losses=losses)
            else:
                self.schedule.step()
        return torch.stack(losses).mean().detach() if losses else None

    def reduce(self, loss: torch.Tensor | None) -> None:
        """After backward: the tied embedding/head gradients summed over the first and last
        stage, then gradients (and the loss) averaged over the dp group."""
        if self.schedule is not None:
            pipeline.sync_tied(self.module, self.tied_group)
        if self.dp_group is not None:
            self._average(loss)

    def clip(self, max_norm: float) -> torch.Tensor:
        """After `reduce`: scale the rank's gradients so the layout's global norm is at most
        `max_norm` (workload/clip.py); the norm before clipping, the same on every rank."""
        last = self.schedule is not None and self.module.last
        return clip.clip_(self.module.parameters(), max_norm, tied=self.module.tied() if last else None,
                          tp_index=self.tp_index, dp_index=self.dp_index, device=self._device())

    def global_loss(self, loss: torch.Tensor | None) -> torch.Tensor:
        """The global batch's loss on every rank: after `reduce`, the dp·tp ranks that hold it
        (the last stage's) hold the same value; one all_reduce over the world spreads it."""
        import torch.distributed as dist

        lay = self.run.layout
        t = loss.detach().clone() if loss is not None else torch.zeros((), device=self._device())
        dist.all_reduce(t)
        return t / (lay.dp * lay.tp)

    def _device(self) -> torch.device:
        return next(self.module.parameters()).device

    def step(self, s: int) -> float | None:
        """One optimizer step; the global batch's loss on the ranks that compute it, else None."""
        x, y = self.replica_rows(*batches(self.run, s))
        if self.schedule is not None:
            loss = self.pipelined(x, y)
        else:
            loss = self.module(x, y)
            loss.backward()
            loss = loss.detach()
        self.reduce(loss)
        if self.run.grad_clip > 0:
            self.clip(self.run.grad_clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return float(loss) if loss is not None else None

    def _average(self, loss: torch.Tensor | None) -> None:
        """Average the gradients (and the loss) over the dp group in one flat all_reduce."""
        import torch.distributed as dist

        grads = [p.grad for p in self.module.parameters() if p.grad is not None]
        local = [g.to_local() if hasattr(g, "to_local") else g for g in grads]
        parts = [t.reshape(-1) for t in local] + ([loss.reshape(1)] if loss is not None else [])
        flat = torch.cat(parts)
        dist.all_reduce(flat, group=self.dp_group)
        flat /= self.run.layout.dp
        i = 0
        for t in local:
            t.copy_(flat[i:i + t.numel()].view_as(t))
            i += t.numel()
        if loss is not None:
            loss.copy_(flat[i])


def profiled(job: Job, steps: int, out: Path) -> list[float | None]:
    """Run `steps` steps under torch.profiler after one warm-up step outside the window (the
    ranks' profiler start-up differs by hundreds of ms); write out/rank{R}.json."""
    from torch.profiler import ProfilerActivity, profile, schedule

    losses = [job.step(0)]
    rank = job.rank
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=steps),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(out / f"rank{rank}.json"))) as prof:
        prof.add_metadata_json("trainprof_mesh", meshes.metadata(job.run.layout, job.threads))
        for s in range(1, steps + 2):
            losses.append(job.step(s))
            prof.step()
    return losses

