"""What the agent reads from the program's first forwards: batch size, device and dtype."""

from __future__ import annotations

from typing import Any

import torch

from trainprof.integrations._common import first_tensor

DTYPES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16", torch.float64: "fp32"}


def batch_items(args: tuple, kwargs: dict, batch_dim: int = 0) -> tuple[int, str] | None:
    """(items, unit) of one micro-batch from a root forward's inputs: `input_ids`, else the
    first tensor. Integer ids count tokens (every element, padding included, as
    FlopCounterMode counts them); floating inputs (features, images) count samples (dimension
    `batch_dim`: 1 for a sequence-first model, `sequence_first`). None when the forward got
    no tensor."""
    t = kwargs.get("input_ids")
    if not isinstance(t, torch.Tensor):
        t = first_tensor(args)
        if t is None:
            t = first_tensor(kwargs)
    if t is None:
        return None
    if t.is_floating_point() or t.is_complex():
        return (int(t.shape[min(batch_dim, t.dim() - 1)]) if t.dim() else 1), "samples"
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


SEQUENCE_LAYERS = (torch.nn.RNNBase, torch.nn.MultiheadAttention)
"""Modules that declare their input layout (`batch_first`); a Transformer layer holds a
MultiheadAttention, which carries the flag."""


def sequence_first(roots: list[torch.nn.Module]) -> str | None:
    """"LSTM.batch_first=False" when every layout-declaring module of the model takes (T, B, ...)
    input (torch's default for RNNs and nn.Transformer): its first input's shape is then
    (sequence, batch), not (batch, sequence) (issue #37: word_language_model's batch and
    sequence length were swapped in the record). None when none declares, or any is batch-first."""
    found = [m for r in roots for m in r.modules() if isinstance(m, SEQUENCE_LAYERS)]
    if found and not any(getattr(m, "batch_first", False) for m in found):
        return f"{type(found[0]).__name__}.batch_first=False"
    return None


def loader_settings(loader: Any) -> dict[str, Any]:
    """A DataLoader's input-pipeline settings as the program set them (the fields a data-loading
    finding would otherwise advise)."""
    return {"class": type(loader).__name__, "num_workers": int(getattr(loader, "num_workers", 0) or 0),
            "pin_memory": bool(getattr(loader, "pin_memory", False)),
            "persistent_workers": bool(getattr(loader, "persistent_workers", False)),
            "prefetch_factor": getattr(loader, "prefetch_factor", None),
            "batch_size": getattr(loader, "batch_size", None)}
