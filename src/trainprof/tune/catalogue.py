"""The optimisation catalogue: each knob knows how to apply itself, when it applies and what
it may cost. Order: a bigger batch, then the input pipeline (DataLoader workers, pinned memory,
non-blocking copies), then compute (torch.compile, mixed precision, TF32, fused AdamW, ...),
as in PyTorch's Performance Tuning Guide (pytorch.org/tutorials/recipes/recipes/tuning_guide.html);
knobs that trade speed for memory come last.

A knob is a function of a `TrainConfig` (workload/config.py) that returns a new one
(`dataclasses.replace`), so every knob it sets is a declared, typed, validated field.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any, Callable

from trainprof.workload.config import TrainConfig

Config = dict  # a config as tune.json shows it (tune/reference.sparse); knobs work on TrainConfigs


@dataclass(frozen=True)
class Knob:
    name: str
    description: str
    apply: Callable[[Any, Any], Any]  # (config, device kind) → new config; None (n/a) or a str: why it does not apply
    same_math: bool  # same data and maths up to rounding: the loss trajectory must match
    cost: str  # what it may cost (accuracy, memory, compile time)
    speed: bool = True  # part of the speed ladder (memory knobs are not)


def _set(cfg: TrainConfig, **kv) -> TrainConfig | None:
    if all(getattr(cfg, k) == v for k, v in kv.items()):
        return None  # already so: nothing to try
    return replace(cfg, **kv)


def _batch(cfg: TrainConfig, dev: str) -> TrainConfig | None:
    assert cfg.micro_batch is not None, "the ladder runs on resolved configs"
    return replace(cfg, micro_batch=2 * cfg.micro_batch)


def _workers(cfg: TrainConfig, dev: str) -> TrainConfig | None:
    n = min(4, max(1, (os.cpu_count() or 2) // 2))
    return _set(cfg, num_workers=n, pin_memory=dev == "cuda")


def _non_blocking(cfg: TrainConfig, dev: str) -> TrainConfig | None:
    return _set(cfg, non_blocking=True, pin_memory=True) if dev == "cuda" else None


def _dtype(name: str, cuda_only: bool) -> Callable[[TrainConfig, str], TrainConfig | None]:
    def apply(cfg: TrainConfig, dev: str) -> TrainConfig | None:
        if cuda_only and dev != "cuda":
            return None
        return _set(cfg, dtype=name)
    return apply


def _tf32(cfg: TrainConfig, dev: str) -> TrainConfig | None:
    return _set(cfg, tf32=True) if dev == "cuda" and cfg.dtype in ("fp32", "auto") else None


def _pad(cfg: TrainConfig, dev: str) -> TrainConfig | None:
    return _set(cfg, pad_vocab=True)


def _threads(cfg: TrainConfig, dev: str) -> TrainConfig | None:
    import torch

    n = os.cpu_count() or 1
    return _set(cfg, threads=n) if dev == "cpu" and n != torch.get_num_threads() else None


def _grad_accum(cfg: TrainConfig, dev: str) -> TrainConfig | None:
    mb = cfg.micro_batch
    assert mb is not None, "the ladder runs on resolved configs"
    if mb < 2:
        return None
    return replace(cfg, micro_batch=mb // 2, grad_accum=2 * cfg.grad_accum)


# Micro-batches per optimizer step of the speed knob. 2: tune's 10-step trials keep 3 measured
# steps at 5 (warm-up 2); the gain is per-step costs (optimizer, clipping, zero_grad and, under
# DDP, the all-reduce) paid once per K micro-batches, so it is largest from 1 to 2 anyway.
ACCUM_K = 2


def _accum_speed(cfg: TrainConfig, dev: str) -> TrainConfig | str:
    """The same micro-batch, K× the accumulation, K× fewer steps: the same tokens seen, so the
    validation loss compares like with like (a bigger global batch, hence fewer, larger updates)."""
    k = ACCUM_K
    if cfg.steps % k:
        return f"--steps {cfg.steps} is not a multiple of {k}: the trial would not see the baseline's tokens"
    if cfg.steps // k <= cfg.warmup_steps:
        return (f"--steps {cfg.steps} leaves no measured step at {cfg.steps // k} steps of {k}× the batch "
                f"(warm-up {cfg.warmup_steps}); needs --steps ≥ {k * (cfg.warmup_steps + 1)}")
    return replace(cfg, grad_accum=k * cfg.grad_accum, steps=cfg.steps // k)


KNOBS: tuple[Knob, ...] = (
    Knob("batch_size", "double the micro-batch (more tokens per kernel, per-step costs amortised)", _batch,
         same_math=False, cost="memory grows ~linearly; a different global batch may need another LR"),
    Knob("grad_accum_speed", f"{ACCUM_K} micro-batches per optimizer step, {ACCUM_K}× fewer steps (the same "
         "micro-batch and tokens, a bigger global batch): fewer optimizer steps and, under DDP (no_sync), "
         "all-reduces per token", _accum_speed, same_math=False,
         cost="fewer, larger updates: may learn less per token (the guard's validation rule, at the same tokens)"),
    Knob("dataloader_workers", "DataLoader worker processes (+ pinned memory on GPU)", _workers, same_math=True,
         cost="host memory and CPU cores per worker"),
    Knob("non_blocking", "pinned host batches copied with non_blocking=True", _non_blocking, same_math=True,
         cost="pinned (page-locked) host memory"),
    Knob("compile", "torch.compile the model (fused kernels, fewer launches)", lambda c, d: _set(c, compile=True),
         same_math=True, cost="compile time on the first steps (reported separately); recompiles on new shapes"),
    Knob("bf16", "bf16 autocast (Tensor Cores on GPUs; AMX/AVX-512 BF16 on some CPUs)", _dtype("bf16", False),
         same_math=True, cost="8-bit mantissa in matmuls: small loss differences"),
    Knob("fp16", "fp16 autocast with a GradScaler", _dtype("fp16", True), same_math=True,
         cost="overflow risk handled by loss scaling; slow on CPUs"),
    Knob("tf32", "TF32 Tensor Core matmuls for fp32", _tf32, same_math=True,
         cost="10-bit mantissa in matmul inputs"),
    Knob("fused_adamw", "AdamW(fused=True): the update in a few kernels", lambda c, d: _set(c, optimizer="fused"),
         same_math=True, cost="none known"),
    Knob("flash_attention", "fused scaled-dot-product attention instead of softmax(QKᵀ)V",
         lambda c, d: _set(c, attention="sdpa"), same_math=True, cost="none known"),
    Knob("pad_vocab", "vocabulary padded to a multiple of 64 (aligned GEMM tiles)", _pad, same_math=True,
         cost="a few unused embedding rows"),
    Knob("gc_disable", "no Python GC during steps (collected every 100)", lambda c, d: _set(c, gc_disable=True),
         same_math=True, cost="memory held by reference cycles grows between collections"),
    Knob("threads", "one intra-op thread per CPU core", _threads, same_math=True, cost="none on a dedicated machine"),
    Knob("activation_checkpointing", "recompute block activations in backward", lambda c, d: _set(
        c, activation_checkpointing=True), same_math=True, cost="~1/3 more compute; saves activation memory"),
    Knob("grad_accumulation", "half the micro-batch, twice the accumulation (same global batch)", _grad_accum,
         same_math=True, cost="more, smaller kernels: slower; saves memory", speed=False),
)


def by_name(names: list[str]) -> tuple[Knob, ...]:
    known = {k.name: k for k in KNOBS}
    unknown = [n for n in names if n not in known]
    if unknown:
        from trainprof.errors import UsageError

        raise UsageError(f"--knobs: unknown {', '.join(unknown)}; choose from {', '.join(known)}")
    return tuple(known[n] for n in names)
