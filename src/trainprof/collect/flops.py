"""Count FLOPs once with torch.utils.flop_counter.FlopCounterMode.

FlopCounterMode counts matmuls, convolutions and attention kernels from their shapes
(2 FLOPs per multiply-add; backward = 2× forward for matmuls). We adjust attention so the
count is *model* FLOPs (PaLM App. B) on every device:

* CPU's fused SDPA kernel (`_scaled_dot_product_flash_attention_for_cpu`) has no formula in
  torch, so attention on CPU would count as 0. We supply torch's own forward formula
  (4·B·H·Tq·Tk·D: QKᵀ and A·V over the full score matrix, no causal saving).
* torch's backward formula for the flash/efficient/cuDNN kernels adds the recomputation of
  QKᵀ that flash backward performs (2.5× forward). That is hardware work, not model work,
  and the decomposed (math) path counts 2× forward, so the same model would count
  differently per device. We count every attention backward as 2× forward.

Counting on the real device costs a real step. For our own model we count on the `meta`
device instead: no memory, no compute, same shapes, so the count is free even for 774M.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils import flop_counter as _fc


def _sdpa_forward(query_shape, key_shape, value_shape, *args: Any, out_shape=None, **kw: Any) -> int:
    return _fc.sdpa_flop_count(query_shape, key_shape, value_shape)


def _sdpa_backward(grad_out_shape, query_shape, key_shape, value_shape, *args: Any,
                   out_shape=None, **kw: Any) -> int:
    return 2 * _fc.sdpa_flop_count(query_shape, key_shape, value_shape)


def _attention_mapping() -> dict[Any, Callable[..., int]]:
    aten = torch.ops.aten
    fwd = ["_scaled_dot_product_flash_attention_for_cpu"]
    bwd = ["_scaled_dot_product_flash_attention_for_cpu_backward",
           "_scaled_dot_product_flash_attention_backward",
           "_scaled_dot_product_efficient_attention_backward",
           "_scaled_dot_product_cudnn_attention_backward"]
    mapping: dict[Any, Callable[..., int]] = {}
    for names, fn in ((fwd, _sdpa_forward), (bwd, _sdpa_backward)):
        for n in names:
            op = getattr(aten, n, None)  # ops differ between torch versions and builds
            if op is not None:
                mapping[op] = fn
    return mapping


def flop_counter() -> _fc.FlopCounterMode:
    """A FlopCounterMode with our attention conventions, to enter and exit by hand (`trainprof
    profile` counts one real step of a user's program between two hook calls)."""
    return _fc.FlopCounterMode(display=False, custom_mapping=_attention_mapping())


def counted(counter: _fc.FlopCounterMode) -> tuple[int, dict[str, int]]:
    """(total FLOPs, FLOPs per aten op) of a counter that has run."""
    per_op = {str(k): int(v) for k, v in counter.get_flop_counts().get("Global", {}).items()}
    return int(counter.get_total_flops()), per_op


def count_flops(fn: Callable[[], object]) -> tuple[int, dict[str, int]]:
    """Run `fn` under FlopCounterMode; return (total FLOPs, FLOPs per aten op)."""
    counter = flop_counter()
    with counter:
        fn()
    return counted(counter)


def count_train_step_flops(
    model: torch.nn.Module,
    batch: tuple[torch.Tensor, ...] | torch.Tensor,
    loss_fn: Callable[..., torch.Tensor] | None = None,
) -> int:
    """FLOPs of one forward + backward of `model` on `batch` (a user's model, real device).

    Costs one extra forward+backward. Gradients are saved and restored, so calling it in the
    middle of gradient accumulation is safe. `loss_fn(model, batch) -> loss`; by default
    `model(*batch)` must return the loss (or a tensor we sum).
    """
    saved = {p: (None if p.grad is None else p.grad.detach().clone()) for p in model.parameters()}

    def step() -> None:
        if loss_fn is not None:
            loss = loss_fn(model, batch)
        else:
            out = model(*batch) if isinstance(batch, (tuple, list)) else model(batch)
            loss = out if out.dim() == 0 else out.float().sum()
        loss.backward()

    try:
        total, _ = count_flops(step)
    finally:
        for p, g in saved.items():
            p.grad = g
    return total
