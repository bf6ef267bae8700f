"""Energy from sampled power or from a cumulative energy counter, over a time window (pure).

Power samples are joined by straight lines (the trapezoid rule) and the window's ends are
interpolated, so a window need not start or end on a sample:

    E = ∫_{t0}^{t1} P(t) dt ≈ Σ_i (P_i + P_{i+1})/2 · (t_{i+1} − t_i)

A counter (RAPL energy_uj, NVML total energy) is read at the two ends by linear
interpolation and differenced. Both need samples on both sides of the window; a window
reaching outside the samples is clipped to them, and `coverage` says how much was left.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def _check(ts: Sequence[float], ys: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(ts, dtype=float)
    y = np.asarray(ys, dtype=float)
    if t.shape != y.shape or t.ndim != 1:
        raise ValueError("times and values must be 1-D and of equal length")
    if len(t) < 2:
        raise ValueError("need at least two samples")
    if np.any(np.diff(t) < 0):
        raise ValueError("sample times must not decrease")
    return t, y


def _clip(t: np.ndarray, t0: float | None, t1: float | None) -> tuple[float, float, float]:
    """(a, b, coverage): the window clipped to the samples, and the kept fraction of it."""
    lo, hi = float(t[0]), float(t[-1])
    a = lo if t0 is None else float(t0)
    b = hi if t1 is None else float(t1)
    if b < a:
        raise ValueError(f"window ends before it starts ({a} > {b})")
    ca, cb = max(a, lo), min(b, hi)
    if cb <= ca:
        return ca, ca, 0.0
    return ca, cb, (cb - ca) / (b - a) if b > a else 1.0


def integrate_power(ts: Sequence[float], watts: Sequence[float], t0: float | None = None,
                    t1: float | None = None) -> tuple[float, float]:
    """(joules, coverage) of power samples over [t0, t1] (default: all samples)."""
    t, p = _check(ts, watts)
    a, b, coverage = _clip(t, t0, t1)
    if b <= a:
        return 0.0, coverage
    inside = (t > a) & (t < b)
    grid = np.concatenate(([a], t[inside], [b]))
    # the samples' own values inside (a step change is two samples at one time), interpolated ends
    y = np.concatenate(([np.interp(a, t, p)], p[inside], [np.interp(b, t, p)]))
    return float(np.sum((y[1:] + y[:-1]) / 2 * np.diff(grid))), coverage


def counter_delta(ts: Sequence[float], joules: Sequence[float], t0: float | None = None,
                  t1: float | None = None) -> tuple[float, float]:
    """(joules, coverage) from a cumulative energy counter read at [t0, t1]."""
    t, e = _check(ts, joules)
    a, b, coverage = _clip(t, t0, t1)
    return float(np.interp(b, t, e) - np.interp(a, t, e)), coverage
