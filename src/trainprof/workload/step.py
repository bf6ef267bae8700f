"""One optimizer step of the reference workload, phase by phase (nanoGPT's loop body).

Each phase runs inside `phase(name)`: the Monitor's timers for measured steps,
`record_function` ranges under torch.profiler, NVTX ranges under Nsight Systems — the same
step code in every case, so what is profiled is what was measured.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Callable

import torch

from trainprof.workload import parallel
from trainprof.workload.setup import Session

Phase = Callable[[str], Any]


def make_step(s: Session) -> Callable[[int, Phase], torch.Tensor]:
    """`step(i, phase)`: grad_accum micro-batches, then the optimizer; returns the loss of the
    global batch (a tensor: the caller decides when to read it, i.e. when to sync)."""
    if s.job is not None:
        return make_layout_step(s)
    cfg, device, model, step_model = s.cfg, s.device, s.model, s.step_model
    opt, scaler, amp = s.opt, s.scaler, s.amp
    ddp_no_sync = s.dist is not None and cfg.strategy == "ddp" and cfg.grad_accum > 1
    dist = s.dist

    def one_step(step: int, phase: Phase) -> torch.Tensor:
        loss_sum = torch.zeros((), device=device)
        for micro in range(cfg.grad_accum):
            with phase("data"):
                # read from the session at each call: `validate` drops the iterator (and with
                # it the DataLoader's persistent workers) by setting s.batches to None
                x, y = next(s.batches)
            with phase("h2d"):
                x = x.to(device, non_blocking=cfg.non_blocking)
                y = y.to(device, non_blocking=cfg.non_blocking)
            # DDP: all-reduce gradients only on the last micro-batch of the step. no_sync must hold
            # over the forward too: DDP arms its reducer in forward (measured with the backward alone
            # inside it: every micro-batch all-reduced, 2 × 4 B × params a step at --grad-accum 2)
            sync = not ddp_no_sync or micro == cfg.grad_accum - 1
            with contextlib.nullcontext() if sync else step_model.no_sync():
                with phase("forward"):
                    with amp:
                        loss = step_model(x, y) / cfg.grad_accum
                with phase("backward"):
                    scaler.scale(loss).backward()
            loss_sum += loss.detach()
        with phase("optimizer"):
            for g in opt.param_groups:
                g["lr"] = lr_at(min(step, cfg.steps - 1), cfg.steps, cfg.lr)
            if cfg.grad_clip > 0:
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
        # the global batch's loss (one more small collective; the step syncs anyway)
        return parallel.mean_across_ranks(loss_sum) if dist else loss_sum

    return one_step


def make_layout_step(s: Session) -> Callable[[int, Phase], torch.Tensor]:
    """`step(i, phase)` of a --tp/--pp run: workload/layout_train.Job's forward, backward and
    reductions with this loop's data, learning rate and phases. Under pipeline parallel the
    schedule interleaves forwards and backwards of its micro-batches: each micro-batch's forward
    (and loss) on the stage is the `forward` phase, its backward the `backward` phase, the rest of
    the schedule (receives, sends, the bubble) the `pipeline` phase (pipeline.Split). Gradients are clipped to the
    layout's global norm after the tied-gradient sum and the dp average (workload/clip.py), as
    one process clips them."""
    cfg, device, job, opt, amp = s.cfg, s.device, s.job, s.opt, s.amp

    def one_step(step: int, phase: Phase) -> torch.Tensor:
        loss_sum: torch.Tensor | None = None
        for _ in range(cfg.grad_accum):  # 1 under --pp (workload/layout_flags.py)
            with phase("data"):
                x, y = next(s.batches)
            with phase("h2d"):
                x = x.to(device, non_blocking=cfg.non_blocking)
                y = y.to(device, non_blocking=cfg.non_blocking)
            if job.schedule is not None:
                with amp:  # the schedule's own forward and backward phases (pipeline.Split)
                    loss = job.pipelined(x, y, phase)
            else:
                with phase("forward"), amp:
                    loss = job.module(x, y) / cfg.grad_accum
                with phase("backward"):
                    loss.backward()
                loss = loss.detach()
            if loss is not None:
                loss_sum = loss if loss_sum is None else loss_sum + loss
        with phase("optimizer"):
            job.reduce(loss_sum)  # tied gradients, then the dp all-reduce
            if cfg.grad_clip > 0:
                job.clip(cfg.grad_clip)  # one more all_reduce: a float over the world
            for g in opt.param_groups:
                g["lr"] = lr_at(min(step, cfg.steps - 1), cfg.steps, cfg.lr)
            opt.step()
            opt.zero_grad(set_to_none=True)
        return job.global_loss(loss_sum)

    return one_step


def lr_at(step: int, total: int, peak: float) -> float:
    """Linear warm-up over 10% of the steps, then cosine decay to 10% of the peak."""
    warm = max(1, total // 10)
    if step < warm:
        return peak * (step + 1) / warm
    frac = (step - warm) / max(1, total - warm)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))
