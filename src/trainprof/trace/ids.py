"""Distinct ids (row indices, name ids) without `np.unique`'s sort.

`np.unique(x)` sorts (O(n log n)); for ids the bound is known, and one pass over a mask of
that size gives the same sorted answer; on large traces the sort was a visible share of the
analysis (docs/benchmarks.md, "2026-11-25 evening", "Distinct ids by a mask").
Elsewhere (tids, devices, the graph's per-thread loops) `np.unique` stays.
"""

from __future__ import annotations

import numpy as np


def distinct(ids: np.ndarray, size: int) -> np.ndarray:
    """The distinct values of `ids` (ints in [0, size)), ascending, as intp: `np.unique(ids)`."""
    seen = np.zeros(size, dtype=bool)
    seen[ids] = True
    return np.flatnonzero(seen)

