"""What the agent reads from the program's first forwards: batch size, device and dtype."""

from __future__ import annotations

from typing import Any

import torch

from trainprof.integrations._common import first_tensor

DTYPES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16", torch.float64: "fp32"}


def batch_items(args: tuple, kwargs: dict) -> tuple[int, str] | None:
    """(items, unit) of one micro-batch from a root forward's inputs: `input_ids`, else the
    first tensor. Integer ids count tokens (every element, padding included, as
    FlopCounterMode counts them); floating inputs (features, images) count samples (the
    leading dimension). None when the forward got no tensor."""
    t = kwargs.get("input_ids")
    if not isinstance(t, torch.Tensor):
        t = first_tensor(args)
        if t is None:
            t = first_tensor(kwargs)
    if t is None:
        return None
    if t.is_floating_point() or t.is_complex():
        return (int(t.shape[0]) if t.dim() else 1), "samples"
    return int(t.numel()), "tokens"


def trainable(module: torch.nn.Module) -> bool:
    return any(p.requires_grad for p in module.parameters())


def first_parameter(module: torch.nn.Module) -> torch.Tensor | None:
    return next(iter(module.parameters()), None)


def compute_dtype(device_type: str, param: torch.Tensor | None) -> tuple[str, str]:
    """(dtype column of the peak table, where it came from) at a root forward: autocast's
    dtype when autocast is on for the device, else the parameters' dtype."""
    if torch.is_autocast_enabled(device_type):
        return DTYPES.get(torch.get_autocast_dtype(device_type), "fp32"), "autocast"
    if param is not None:
        return DTYPES.get(param.dtype, "fp32"), "parameters"
    return "fp32", "default"


def optimizer_device(opt: Any) -> torch.device | None:
    for group in getattr(opt, "param_groups", []):
        for p in group.get("params", []):
            if isinstance(p, torch.Tensor):
                return p.device
    return None
