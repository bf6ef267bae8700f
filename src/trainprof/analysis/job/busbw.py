"""Collective bandwidths as nccl-tests defines them (pure functions).

NVIDIA/nccl-tests, doc/PERFORMANCE.md:
  algbw = S / t, with S the size in bytes of the whole array (for all_gather the gathered
  output, `sendcount·sizeof(dtype)·n`; for reduce_scatter the input, `recvcount·sizeof·n`);
  busbw = algbw · factor, the factor making the number comparable to the hardware's link
  bandwidth whatever the rank count n:
    all_reduce      2(n−1)/n   (each element: n−1 additions + n assignments ⇒ 2(n−1) transfers over n links)
    reduce_scatter   (n−1)/n   (the addition half of an all_reduce)
    all_gather       (n−1)/n   (the assignment half)
    all_to_all       (n−1)/n   (each rank keeps 1/n of its data)
    broadcast, reduce, send/recv  1
This is the one table of factors: `bench` (measured collectives) and the trace analysis
(collectives found in traces) both read it, so their busbw are comparable.
"""

from __future__ import annotations

from trainprof.vocab import collectives as cv

FACTORS = {
    cv.ALL_REDUCE: lambda n: 2 * (n - 1) / n,
    cv.REDUCE_SCATTER: lambda n: (n - 1) / n,
    cv.ALL_GATHER: lambda n: (n - 1) / n,
    cv.ALL_TO_ALL: lambda n: (n - 1) / n,
    cv.BROADCAST: lambda n: 1.0,
    cv.REDUCE: lambda n: 1.0,
    cv.SEND_RECV: lambda n: 1.0,
    cv.SEND: lambda n: 1.0,
    cv.RECV: lambda n: 1.0,
}


def bus_factor(op: str, n: int) -> float:
    """busbw / algbw for `op` over `n` ranks (nccl-tests' correction factor)."""
    if n < 1:
        raise ValueError(f"rank count must be ≥ 1, got {n}")
    return FACTORS[op](n)


def algbw(size_bytes: int, seconds: float) -> float:
    """Bytes per second of the whole array S (nccl-tests' `algbw = S/t`)."""
    return size_bytes / seconds


def busbw(op: str, n: int, size_bytes: int, seconds: float) -> float:
    return algbw(size_bytes, seconds) * bus_factor(op, n)
