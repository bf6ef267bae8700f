"""Collectives' sizes: canonical op names (vocab/collectives.py), element sizes, nccl-tests' message
size S, the ops whose message is the same on every rank, and a c10d call's first input.
Pure functions of names and recorded shapes (analysis/job/collectives.py reads traces with them,
analysis/job/collectives_align.py builds signatures from them)."""

from __future__ import annotations

import numpy as np

from trainprof import namematch
from trainprof.vocab import collectives as cv
from trainprof.vocab.collectives import canonical_op  # noqa: F401  (re-exported: the job analysis' name for it)

_DTYPE = namematch.compile(r"\[(\w+)\]|^(\w+)$")  # "c10::Half[2, 3]" style or a bare "float"
_DTYPE_BYTES = {"float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2,
                "bfloat16": 2, "bf16": 2, "int": 4, "int32": 4, "long": 8, "int64": 8, "int8": 1,
                "uint8": 1, "char": 1, "byte": 1, "bool": 1, "short": 2, "int16": 2,
                "float8_e4m3fn": 1, "float8_e5m2": 1}


def dtype_bytes(dtype: str | None) -> int | None:
    return _DTYPE_BYTES.get(dtype.lower().replace("torch.", "")) if dtype else None


def message_bytes(op: str, in_nelems: int, out_nelems: int, elem: int | None) -> int | None:
    """nccl-tests' S: the whole array (all_gather: the gathered output; others: the input)."""
    if elem is None or in_nelems < 0:
        return None
    n = out_nelems if op == cv.ALL_GATHER and out_nelems >= 0 else in_nelems
    return int(n) * elem


# Ops whose message is the same on every rank of the group (a matching signature may use its
# size); all_to_all splits, send/recv and gather/scatter sizes differ between ranks.
SAME_SIZE_OPS = frozenset({cv.ALL_REDUCE, cv.ALL_GATHER, cv.REDUCE_SCATTER, cv.BROADCAST, cv.REDUCE, cv.BARRIER})
# c10d calls whose first input is the whole message (the list and _base forms of all_gather
# and reduce_scatter put the output first, or a list of chunks)
FIRST_INPUT_IS_MESSAGE = frozenset({cv.ALL_REDUCE, cv.BROADCAST, cv.REDUCE})


def first_input(t, row: int) -> tuple[int | None, str | None]:
    """(elements, dtype) of a c10d call's first input tensor, from the recorded shapes."""
    dims_id, types_id = int(t.dims_id[row]), int(t.types_id[row])
    if dims_id < 0 or types_id < 0:
        return None, None
    dims, types = t.arg_values[dims_id], t.arg_values[types_id]
    # c10d ops take a list of tensors first: dims [[[n, m]], ...], types ["GenericList[Tensor]", ...]
    shape = dims[0] if dims else None
    while isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    if not isinstance(shape, (list, tuple)) or not shape or not all(isinstance(d, int) for d in shape):
        return None, None  # [] is a TensorList whose shapes were not recorded, not a scalar
    dtype = types[0] if types else None
    m = _DTYPE.search(dtype) if isinstance(dtype, str) else None
    name = next((g for g in m.groups() if g), None) if m else None
    return int(np.prod(shape, dtype=np.int64)), name if dtype_bytes(name) else None
