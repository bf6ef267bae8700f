"""Message sizes for the collective benchmark. The algbw/busbw formulas and nccl-tests' factors
live in analysis/job/busbw.py (one table for the benchmark and the trace analysis)."""

from __future__ import annotations

from trainprof.analysis.job.busbw import algbw, bus_factor, busbw  # noqa: F401  (one table of factors)
from trainprof.errors import UsageError
from trainprof.vocab import collectives as cv


def message_elems(op: str, size_bytes: int, n: int, elem_bytes: int) -> tuple[int, int, int]:
    """(input elements per rank, output elements per rank, S in bytes) for a message of
    about `size_bytes` (rounded down to whole elements, and for the gather/scatter ops to a
    multiple of n so every rank holds an equal share)."""
    per_rank = size_bytes // elem_bytes // (1 if op == cv.ALL_REDUCE else n)
    if per_rank < 1:
        need = elem_bytes * (1 if op == cv.ALL_REDUCE else n)
        raise UsageError(f"--sizes {size_bytes}: {op} over {n} ranks needs ≥ {need} bytes")
    if op == cv.ALL_REDUCE:
        return per_rank, per_rank, per_rank * elem_bytes
    if op == cv.ALL_GATHER:
        return per_rank, per_rank * n, per_rank * n * elem_bytes
    if op == cv.REDUCE_SCATTER:
        return per_rank * n, per_rank, per_rank * n * elem_bytes
    raise UsageError(f"--op {op}: expected all_reduce, all_gather or reduce_scatter")
