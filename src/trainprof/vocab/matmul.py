"""The matmul-like aten ops, each with where its matrices sit among the recorded inputs.

Before this file the list was spelled in 5 places that had drifted: trace/tensor_core.py
counted aten::addbmm, _grouped_mm, _scaled_grouped_mm and _int_mm as Tensor Core math while
the roofline (analysis/cost/op_cost.py) did not price them, and diagnose/rules.py left
_scaled_mm out of the GEMM shape check. Every user now reads MATMUL_OPS.

Positions are those of `Input Dims`/`Input type` (record_shapes), from the aten schemas
(aten/src/ATen/native/native_functions.yaml):
    mm(self, mat2)                         addmm(self, mat1, mat2)        self: the added input
    bmm(self, mat2)                        baddbmm(self, batch1, batch2)
    addbmm(self, batch1, batch2): Σ_b batch1[b] @ batch2[b] + self (the batch is reduced)
    matmul(self, other), linear(input, weight[N, K], bias)
    _scaled_mm(self, mat2, scale_a, scale_b, ...), _int_mm(self, mat2)
    _grouped_mm(mat_a, mat_b, offs, bias, out_dtype), _scaled_grouped_mm(mat_a, mat_b, scale_a, scale_b, offs, ...)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MatmulOp:
    a: int  # position of A [.., M, K]
    b: int  # position of B [.., K, N] ([N, K] when b_transposed)
    batched: bool = False  # a batch of matrices: A [B, M, K] × B [B, K, N]
    adds: bool = False  # out = input + A·B: the added input sits before A
    b_transposed: bool = False  # linear: the weight is stored [N, K]
    dtype: str | None = None  # the math dtype the op implies (None: its inputs')


MM, ADDMM, BMM, BADDBMM, ADDBMM = "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm"
MATMUL, LINEAR = "aten::matmul", "aten::linear"
SCALED_MM, INT_MM = "aten::_scaled_mm", "aten::_int_mm"
GROUPED_MM, SCALED_GROUPED_MM = "aten::_grouped_mm", "aten::_scaled_grouped_mm"

MATMUL_OPS: dict[str, MatmulOp] = {
    MM: MatmulOp(0, 1),
    ADDMM: MatmulOp(1, 2, adds=True),
    BMM: MatmulOp(0, 1, batched=True),
    BADDBMM: MatmulOp(1, 2, batched=True, adds=True),
    ADDBMM: MatmulOp(1, 2, batched=True, adds=True),
    MATMUL: MatmulOp(0, 1),  # batched when A has 3+ dims: the caller looks at the shapes
    LINEAR: MatmulOp(0, 1, b_transposed=True),
    SCALED_MM: MatmulOp(0, 1, dtype="fp8"),
    INT_MM: MatmulOp(0, 1, dtype="int8"),
    GROUPED_MM: MatmulOp(0, 1),  # a 3-D side is a group of matrices (MoE experts)
    SCALED_GROUPED_MM: MatmulOp(0, 1, dtype="fp8"),
}
