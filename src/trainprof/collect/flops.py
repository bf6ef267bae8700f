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

import threading
from typing import Any, Callable

import torch
from torch.utils import flop_counter as _fc


def _sdpa_forward(query_shape, key_shape, value_shape, *args: Any, out_shape=None, **kw: Any) -> int:
    return _fc.sdpa_flop_count(query_shape, key_shape, value_shape)


def _sdpa_backward(grad_out_shape, query_shape, key_shape, value_shape, *args: Any,
                   out_shape=None, **kw: Any) -> int:
    return 2 * _fc.sdpa_flop_count(query_shape, key_shape, value_shape)


def _rnn_weight_flops(tokens: int, weights: Any) -> int:
    """2 FLOPs per multiply-add of every (gates·H × in) weight matrix, once per time step and
    sequence: one layer's gates are x·W_ihᵀ + h·W_hhᵀ, whatever the cell (LSTM: 4 gates, GRU:
    3, tanh RNN: 1), so the count is 2 · T·B · Σ numel(W) over the 2-D weights (biases and
    the gates' elementwise maths are not counted, as for a Linear's bias and activation)."""
    shapes = [w for w in weights if isinstance(w, (list, tuple, torch.Size)) and len(w) == 2]
    return 2 * tokens * sum(int(a) * int(b) for a, b in shapes)


def _rows(shape: Any) -> int:
    """Time steps × sequences of an RNN input: every dimension but the features (T, B or B, T,
    or the packed (ΣB, I))."""
    n = 1
    for d in list(shape)[:-1]:
        n *= int(d)
    return n


def _mkldnn_rnn_forward(input_shape, w_ih, w_hh, *args: Any, out_shape=None, **kw: Any) -> int:
    """CPU LSTM (oneDNN), one layer and direction a call: invisible to torch's FlopCounterMode
    (issue #37: word_language_model counted 8.88e9 of 1.157e10 FLOPs)."""
    return _rnn_weight_flops(_rows(input_shape), [w_ih, w_hh])


def _mkldnn_rnn_backward(input_shape, w_ih, w_hh, *args: Any, out_shape=None, **kw: Any) -> int:
    return 2 * _mkldnn_rnn_forward(input_shape, w_ih, w_hh)  # data and weight gradients, as for a matmul


def _cudnn_rnn_forward(input_shape, weights, *args: Any, out_shape=None, **kw: Any) -> int:
    """cuDNN / MIOpen RNN (LSTM, GRU, tanh/ReLU RNN), every layer and direction in one call;
    `weights` holds each layer's [W_ih, W_hh(, b_ih, b_hh)] (and W_hr with proj_size)."""
    return _rnn_weight_flops(_rows(input_shape), weights)


def _cudnn_rnn_backward(input_shape, weights, *args: Any, out_shape=None, **kw: Any) -> int:
    return 2 * _cudnn_rnn_forward(input_shape, weights)


RNN_FORMULAS = {"mkldnn_rnn_layer": _mkldnn_rnn_forward, "mkldnn_rnn_layer_backward": _mkldnn_rnn_backward,
                "_cudnn_rnn": _cudnn_rnn_forward, "_cudnn_rnn_backward": _cudnn_rnn_backward,
                "miopen_rnn": _cudnn_rnn_forward, "miopen_rnn_backward": _cudnn_rnn_backward}
"""Fused RNN kernels torch's FlopCounterMode has no formula for; GRU and RNN on CPU decompose
into addmm/mm, which it counts already."""


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
    for n, fn in RNN_FORMULAS.items():
        op = getattr(aten, n, None)
        if op is not None:
            mapping[op] = fn
    return mapping


def flop_counter() -> _fc.FlopCounterMode:
    """A FlopCounterMode with our attention conventions, to enter and exit by hand (`trainprof
    profile` counts one real step of a user's program between two hook calls)."""
    return _fc.FlopCounterMode(display=False, custom_mapping=_attention_mapping())


def training_part(in_training_forward: bool = False) -> str:
    """Which part of a training step the op running now belongs to: "forward" (gradients on, no
    backward running; or gradients off inside a module call that began with them on: a custom
    autograd.Function's forward or reentrant checkpointing's, which autograd runs without
    gradients), "backward" (inside autograd's engine, gradients off), "recompute" (inside the
    engine with gradients on: activation checkpointing re-running a forward), or "excluded"
    (gradients off otherwise, or inference mode: an evaluation, a generation loop, the
    optimizer's update). `_current_graph_task_id` is -1 outside backward, on any thread."""
    in_backward = torch._C._current_graph_task_id() != -1
    inference = torch.is_inference_mode_enabled()
    grad = torch.is_grad_enabled() and not inference
    if in_backward:
        return "recompute" if grad else "backward"
    return "forward" if grad or (in_training_forward and not inference) else "excluded"


class TrainingFlopCounter(_fc.FlopCounterMode):
    """FlopCounterMode that counts only the training work of a step (issue #37: minGPT's
    500-token generation under no_grad, right after its first optimizer step, was counted as
    training: 7.67e9 FLOPs per step where training does 1.28e9). What it leaves out, and the
    checkpointing recomputation (hardware FLOPs, not model FLOPs), are kept apart in `parts`.

    While it counts, a global module forward pre-hook and hook note whether the outermost
    module call running in this thread began with gradients on (`_training_forward`): inside
    it, work autograd runs without gradients is still the training forward. The two hooks are
    registered on entry and removed on exit (the agent enters and exits from an optimizer
    step hook, outside any module hook loop)."""

    def __init__(self) -> None:
        super().__init__(display=False, custom_mapping=_attention_mapping())
        self.parts: dict[str, int] = dict.fromkeys(("forward", "backward", "recompute", "excluded"), 0)
        self._local = threading.local()
        self._hooks: list[Any] = []

    def __enter__(self) -> "TrainingFlopCounter":
        from torch.nn.modules import module as nn_module

        self._hooks = [nn_module.register_module_forward_pre_hook(self._pre),
                       nn_module.register_module_forward_hook(self._post, always_call=True)]
        return super().__enter__()

    def __exit__(self, *args: Any) -> Any:
        try:
            return super().__exit__(*args)
        finally:
            for h in self._hooks:
                h.remove()
            self._hooks = []

    def _pre(self, module: Any, args: Any) -> None:
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            self._local.grad = torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
        self._local.depth = depth + 1

    def _post(self, module: Any, args: Any, out: Any) -> None:
        self._local.depth = max(0, getattr(self._local, "depth", 0) - 1)

    def _training_forward(self) -> bool:
        return getattr(self._local, "depth", 0) > 0 and getattr(self._local, "grad", False)

    def _count_flops(self, func_packet: Any, out: Any, args: Any, kwargs: Any) -> Any:
        formula = self.flop_registry.get(func_packet)
        if formula is None:
            return out
        part = training_part(self._training_forward())
        n = int(formula(*args, **kwargs, out_val=out))
        self.parts[part] += n
        if part in ("forward", "backward"):
            for par in set(self.mod_tracker.parents):
                self.flop_counts[par][func_packet] += n
        return out


def training_flop_counter() -> _fc.FlopCounterMode:
    """The counter `trainprof profile` enters and exits by hand around one real step of the
    user's program; FlopCounterMode itself (counting everything) where this torch lacks the
    hook TrainingFlopCounter overrides."""
    if not hasattr(_fc.FlopCounterMode, "_count_flops") or not hasattr(torch._C, "_current_graph_task_id"):
        return flop_counter()
    return TrainingFlopCounter()


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
