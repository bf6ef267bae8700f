"""One GEMM to time: shape, FLOPs, operands for a dtype, and the callable.

FLOPs of C[M,N] = A[M,K]·B[K,N] are 2·M·N·K (a multiply and an add per term; FLOPs, not
MACs), times the batch for a batched GEMM.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

TORCH_DTYPES = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16"}


@dataclass(frozen=True)
class Gemm:
    m: int
    n: int
    k: int
    batch: int = 1

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.m * self.n * self.k

    @property
    def label(self) -> str:
        mnk = f"{self.m}x{self.n}x{self.k}"
        return mnk if self.batch == 1 else f"{self.batch}·{mnk}"

    def operand_bytes(self, dtype: str) -> int:
        """A, B and C together (C in the input dtype; fp8 writes bf16)."""
        size = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}[dtype]
        out = 2 if dtype == "fp8" else size
        return self.batch * ((self.m * self.k + self.k * self.n) * size + self.m * self.n * out)


@contextlib.contextmanager
def matmul_precision(dtype: str) -> Iterator[None]:
    """tf32 = fp32 storage with TF32 tensor-core math ("high"); fp32 = full precision."""
    import torch

    if dtype not in ("fp32", "tf32"):
        yield
        return
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if dtype == "tf32" else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def make_gemm(g: Gemm, dtype: str, op: str, device: str) -> Callable[[], Any]:
    """A zero-argument callable running the GEMM on fresh random operands.

    op: "mm" (torch.mm / torch.bmm) or "linear" (F.linear: A·Wᵀ with W stored [N,K], the
    layout of nn.Linear). On CPU the two can take different kernels (see backends/cpu.py).
    """
    import torch
    import torch.nn.functional as F

    if dtype == "fp8":
        return _make_fp8(g, device)
    tdtype = getattr(torch, TORCH_DTYPES[dtype])
    lead = (g.batch,) if g.batch > 1 else ()
    a = torch.randn(*lead, g.m, g.k, device=device).to(tdtype)
    if op == "linear":
        w = torch.randn(g.n, g.k, device=device).to(tdtype)
        return lambda: F.linear(a, w)
    b = torch.randn(*lead, g.k, g.n, device=device).to(tdtype)
    if g.batch > 1:
        return lambda: torch.bmm(a, b)
    return lambda: torch.mm(a, b)


def _make_fp8(g: Gemm, device: str) -> Callable[[], Any]:
    import torch

    if g.batch != 1:
        raise ValueError("fp8 GEMMs are not batched here")
    a = torch.randn(g.m, g.k, device=device).to(torch.float8_e4m3fn)
    # _scaled_mm wants B column-major: a [N,K] row-major tensor, transposed.
    b = torch.randn(g.n, g.k, device=device).to(torch.float8_e4m3fn).t()
    one = torch.tensor(1.0, device=device)
    return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def fp8_available(device: str) -> bool:
    """Whether torch._scaled_mm runs here (Hopper/Ada GPUs and newer; some CPU builds)."""
    try:
        import torch

        if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
            return False
        _make_fp8(Gemm(16, 16, 16), device)()
        return True
    except (RuntimeError, TypeError, NotImplementedError, ValueError):
        return False
