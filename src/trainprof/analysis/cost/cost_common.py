"""Shared pieces of the op cost formulas (op_cost.py, conv_cost.py): element sizes, the
Cost record, shape helpers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

ELEM_BYTES = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "long": 8,
    "int64_t": 8, "int": 4, "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1,
    "c10::Float8_e5m2fnuz": 1, "c10::complex<float>": 8,
}
DTYPE_NAME = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16",
              "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
              "c10::Float8_e5m2fnuz": "fp8"}


@dataclass(frozen=True)
class Cost:
    flops: float
    bytes: float
    dtype: str | None  # fp32 | bf16 | fp16 | fp8 | None: the dtype of the math
    estimated: bool = False  # a shape argument was missing and assumed (see `assumption`)
    assumption: str | None = None  # what was assumed, in words, when estimated


def numel(shape: Sequence[int] | None) -> int:
    return math.prod(shape) if shape else (1 if shape == [] or shape == () else 0)


def _is_tensor(dims: Any, typ: Any) -> bool:
    return isinstance(dims, (list, tuple)) and typ in ELEM_BYTES and all(isinstance(d, int) for d in dims)


def _tensor_args(dims: Sequence, types: Sequence) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(d), t) for d, t in zip(dims, types) if _is_tensor(d, t)]


def _bytes(shape: Sequence[int], typ: str) -> int:
    return numel(shape) * ELEM_BYTES.get(typ, 4)


def _math_dtype(types: Sequence) -> str | None:
    for t in types:
        if t in DTYPE_NAME:
            return DTYPE_NAME[t]
    return None


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    n = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(n):
        dims = [s[len(s) - n + i] for s in shapes if len(s) - n + i >= 0]
        out.append(max(dims) if dims else 1)
    return tuple(out)
