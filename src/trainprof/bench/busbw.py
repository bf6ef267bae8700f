"""Collective bandwidths as nccl-tests defines them (pure functions, no torch).

NVIDIA/nccl-tests, doc/PERFORMANCE.md:
  algbw = S / t, with S the size in bytes of the whole array (for all_gather the gathered
  output, `sendcount·sizeof(dtype)·n`; for reduce_scatter the input, `recvcount·sizeof·n`);
  busbw = algbw · factor, the factor making the number comparable to the hardware's link
  bandwidth whatever the rank count n:
    all_reduce      2(n−1)/n   (each element: n−1 additions + n assignments ⇒ 2(n−1) transfers over n links)
    reduce_scatter   (n−1)/n   (the addition half of an all_reduce)
    all_gather       (n−1)/n   (the assignment half)
"""

from __future__ import annotations

from trainprof.errors import UsageError

_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
}


def bus_factor(op: str, n: int) -> float:
    """busbw / algbw for `op` over `n` ranks (nccl-tests' correction factor)."""
    if n < 1:
        raise ValueError(f"rank count must be ≥ 1, got {n}")
    return _FACTORS[op](n)


def algbw(size_bytes: int, seconds: float) -> float:
    """Bytes per second of the whole array S (nccl-tests' `algbw = S/t`)."""
    return size_bytes / seconds


def busbw(op: str, n: int, size_bytes: int, seconds: float) -> float:
    return algbw(size_bytes, seconds) * bus_factor(op, n)


def message_elems(op: str, size_bytes: int, n: int, elem_bytes: int) -> tuple[int, int, int]:
    """(input elements per rank, output elements per rank, S in bytes) for a message of
    about `size_bytes` (rounded down to whole elements, and for the gather/scatter ops to a
    multiple of n so every rank holds an equal share)."""
    per_rank = size_bytes // elem_bytes // (1 if op == "all_reduce" else n)
    if per_rank < 1:
        need = elem_bytes * (1 if op == "all_reduce" else n)
        raise UsageError(f"--sizes {size_bytes}: {op} over {n} ranks needs ≥ {need} bytes")
    if op == "all_reduce":
        return per_rank, per_rank, per_rank * elem_bytes
    if op == "all_gather":
        return per_rank, per_rank * n, per_rank * n * elem_bytes
    if op == "reduce_scatter":
        return per_rank * n, per_rank, per_rank * n * elem_bytes
    raise UsageError(f"--op {op}: expected all_reduce, all_gather or reduce_scatter")
