"""Global-norm gradient clipping over a dp × tp × pp layout: torch's clip_grad_norm_ by hand.

torch 2.13's clip_grad_norm_ cannot take the norm of DTensor gradients sharded on the tp
mesh beside plain ones, and sees one stage's parameters only. The norm it would give the
unsplit model is √Σ‖g‖² with every parameter counted once, so each rank adds the squares
of the gradients it is the one to count (`counted`):

- a tp-sharded gradient (a DTensor with a Shard placement): every tp rank adds its shard
  (the shards partition it);
- a replicated one (a plain tensor or a Replicate DTensor: embeddings, norms, row-wise
  biases): tp rank 0 only;
- pipeline stages hold distinct parameters, each adds its own, but the tied embedding/head
  lives on the first and the last stage with the same summed gradient (pipeline.sync_tied):
  the first stage adds it;
- dp replicas hold equal gradients after the average: replica 0 adds, the others add 0.

One all_reduce of one float over the world sums the parts, so every rank scales by the same
coefficient, min(1, max_norm / (norm + 1e-6)), as clip_grad_norm_ does
(torch/nn/utils/clip_grad.py, _clip_grads_with_norm_: the epsilon, then the clamp).
"""

from __future__ import annotations

from typing import Any, Iterable

import torch


def counted(*, sharded: bool, tied_copy: bool, tp_index: int, dp_index: int) -> bool:
    """Whether this rank adds the gradient's square to the global sum (module docstring)."""
    if dp_index or tied_copy:
        return False
    return sharded or tp_index == 0


def is_sharded(grad: Any) -> bool:
    """A DTensor gradient with a Shard placement (its local tensor is one part of it)."""
    placements = getattr(grad, "placements", ())
    if any(p.is_partial() for p in placements):  # pending sums: a local norm would be wrong
        raise ValueError("gradient clipping cannot take the norm of a Partial DTensor gradient")
    return any(p.is_shard() for p in placements)


def local(grad: torch.Tensor) -> torch.Tensor:
    """The rank's own tensor of a gradient (a DTensor's local shard or replica)."""
    return grad.to_local() if hasattr(grad, "to_local") else grad


def square_sum(tensors: Iterable[torch.Tensor], device: torch.device) -> torch.Tensor:
    """Σ‖t‖² in fp32: per-tensor norms first, as clip_grad_norm_ takes them."""
    norms = [torch.linalg.vector_norm(t, 2.0, dtype=torch.float32) for t in tensors]
    return torch.stack(norms).square().sum() if norms else torch.zeros((), device=device)


def coefficient(total_norm: torch.Tensor, max_norm: float) -> torch.Tensor:
    """clip_grad_norm_'s scale: max_norm / (norm + 1e-6), clamped to 1 (no device sync)."""
    return torch.clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)


def clip_(params: Iterable[torch.nn.Parameter], max_norm: float, *, tied: torch.nn.Parameter | None,
          tp_index: int, dp_index: int, device: torch.device) -> torch.Tensor:
    """Scale this rank's gradients so the layout's global norm is at most `max_norm`; returns
    the norm before clipping (the same on every rank). `tied`: the last stage's copy of the
    tied embedding/head (not counted here), else None. Call after the tied-gradient sum and
    the dp average, on every rank (one all_reduce over the world)."""
    import torch.distributed as dist

    held = [p for p in params if p.grad is not None]
    mine = [local(p.grad) for p in held if counted(sharded=is_sharded(p.grad), tied_copy=p is tied,
                                                   tp_index=tp_index, dp_index=dp_index)]
    total = square_sum(mine, device)
    dist.all_reduce(total)
    norm = total.sqrt()
    coef = coefficient(norm, max_norm)
    for p in held:
        local(p.grad).mul_(coef)
    return norm
