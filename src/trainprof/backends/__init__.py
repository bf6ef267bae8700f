"""Device access lives here and nowhere else. Nothing touches a device at import time."""

from __future__ import annotations

from trainprof.backends.base import DeviceBackend
from trainprof.errors import UsageError


def resolve_device(requested: str | None) -> str:
    """'auto'/None → 'cuda' when available, else 'cpu'; validate explicit choices."""
    import torch

    req = (requested or "auto").lower()
    if req == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if req == "cpu":
        return "cpu"
    if req == "cuda" or req.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise UsageError(
                f"--device {requested}: CUDA is not available "
                f"(torch {torch.__version__} sees no GPU); use --device cpu"
            )
        if ":" in req:
            idx = req.split(":", 1)[1]
            if not idx.isdigit() or int(idx) >= torch.cuda.device_count():
                raise UsageError(
                    f"--device {requested}: no such GPU (found {torch.cuda.device_count()})"
                )
        return req
    raise UsageError(f"--device {requested}: expected auto, cpu, cuda or cuda:N")


def get_backend(device: str) -> DeviceBackend:
    """A backend for a resolved device string (see `resolve_device`)."""
    if device == "cpu":
        from trainprof.backends.cpu import CpuBackend

        return CpuBackend()
    if device.startswith("cuda"):
        from trainprof.backends.cuda import CudaBackend

        index = int(device.split(":", 1)[1]) if ":" in device else 0
        return CudaBackend(index)
    raise UsageError(f"unsupported device {device!r}")


__all__ = ["DeviceBackend", "get_backend", "resolve_device"]
