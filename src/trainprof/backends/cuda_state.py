"""Process-wide CUDA state the workload reads or sets: bf16 support, the TF32 switches, the
CUDA RNG streams and the collective backend. Kept here so that workload/ never calls
torch.cuda itself (ARCHITECTURE.md: backends/ is the only code that touches CUDA); each
function is a no-op or a plain answer on a machine without CUDA.
"""

from __future__ import annotations

from typing import Any


def supports_bf16(device: str) -> bool:
    """bfloat16 kernels on this CUDA device (Ampere and newer); False off CUDA."""
    import torch

    return device.startswith("cuda") and torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def set_tf32(enabled: bool) -> None:
    """TF32 Tensor Core math for fp32 matmuls and convolutions (torch.backends docs: 10-bit
    mantissa inputs, fp32 accumulation); the setting is process-wide."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


def tf32_state() -> tuple[bool, bool]:
    """(matmul, cuDNN) TF32 flags as they are now: what set_tf32 changes, to put back."""
    import torch

    return bool(torch.backends.cuda.matmul.allow_tf32), bool(torch.backends.cudnn.allow_tf32)


def restore_tf32(state: tuple[bool, bool]) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = state


def rng_state() -> list[Any] | None:
    """Every CUDA device's RNG state (for an exact resume), None without CUDA."""
    import torch

    return torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None


def set_rng_state(state: list[Any] | None) -> None:
    import torch

    if state is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state)


def collective_backend() -> str:
    """NCCL when CUDA is there (GPU collectives), else gloo (CPU)."""
    import torch

    return "nccl" if torch.cuda.is_available() else "gloo"


def current_device_index() -> int:
    """The CUDA device a bare `torch.device("cuda")` means in this process (the current one,
    as set by torch.cuda.set_device or the launcher); 0 without CUDA."""
    import torch

    return torch.cuda.current_device() if torch.cuda.is_available() else 0


def cudnn_benchmark(enabled: bool | None = None) -> bool:
    """torch.backends.cudnn.benchmark as it was, set to `enabled` when given (process-wide:
    cuDNN times its algorithms for each new input shape and keeps the fastest)."""
    import torch

    was = bool(torch.backends.cudnn.benchmark)
    if enabled is not None:
        torch.backends.cudnn.benchmark = enabled
    return was
