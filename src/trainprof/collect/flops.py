"""Count FLOPs once with torch.utils.flop_counter.FlopCounterMode.

FlopCounterMode counts matmuls, convolutions and attention kernels from their shapes
(2 FLOPs per multiply-add; backward = 2× forward for matmuls). Two gaps we close:

* CPU's fused SDPA kernel (`_scaled_dot_product_flash_attention_for_cpu`) has no formula in
  torch, so attention on CPU would count as 0 FLOPs. We register the same formula torch uses
  for the CUDA flash/efficient kernels (full T×T, no causal saving).
* Counting on the real device costs a real step. For our own model we count on the `meta`
  device instead: no memory, no compute, same shapes, so the count is free even for 774M.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch.utils import flop_counter as _fc

_registered = False


def _register_cpu_sdpa() -> None:
    global _registered
    if _registered:
        return
    aten = torch.ops.aten
    fwd = getattr(aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    bwd = getattr(aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None)
    if fwd is not None and fwd not in _fc.flop_registry and fwd.default not in _fc.flop_registry:

        @_fc.register_flop_formula(fwd)
        def _cpu_sdpa(query_shape, key_shape, value_shape, *args, out_shape=None, **kw) -> int:
            return _fc.sdpa_flop_count(query_shape, key_shape, value_shape)

    if bwd is not None and bwd not in _fc.flop_registry and bwd.default not in _fc.flop_registry:

        @_fc.register_flop_formula(bwd)
        def _cpu_sdpa_bwd(grad_out_shape, query_shape, key_shape, value_shape, *a, out_shape=None, **kw) -> int:
            return _fc.sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)

    _registered = True


def count_flops(fn: Callable[[], object]) -> tuple[int, dict[str, int]]:
    """Run `fn` under FlopCounterMode; return (total FLOPs, FLOPs per aten op)."""
    _register_cpu_sdpa()
    counter = _fc.FlopCounterMode(display=False)
    with counter:
        fn()
    per_op = {str(k): int(v) for k, v in counter.get_flop_counts().get("Global", {}).items()}
    return int(counter.get_total_flops()), per_op


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
