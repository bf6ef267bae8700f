"""Is a before/after change bigger than the noise? (`trainprof diff` on two run folders.)

The test: percentile bootstrap confidence intervals of two ratios of the runs' times per
unit (> 1: NEW is faster), each run's measured steps resampled independently (`resamples`
times, a private seeded generator: the same records always give the same intervals):

    ratio       = median(BASE) / median(NEW)                the typical step
    fast_ratio  = p10(BASE) / p10(NEW)                      the fast steps (FAST_PCT-th percentile)

Why a bootstrap interval and not a Mann-Whitney rank test: it is an interval in the unit the
verdict is read in ("2.96×, 95% CI 2.71–3.12×") rather than a p-value, and a rank test on
hundreds of steps calls a 1% shift "significant" that no user would act on.

Why the fast steps decide: on a machine whose cores other processes want, a step waits for a
core now and then (a scheduler slice, ~4 ms here), so step times pile up in modes 4 and 8 ms
apart and the median jumps between modes from run to run, while the steps that did not wait
hardly move: timing noise is almost all added delay, and a low order statistic is the robust
estimate under added delay (Chen & Revels 2016, "Robust benchmarking in noisy environments",
arXiv:1608.04295; timeit's reason for its minimum). The 10th percentile rather than the
minimum: with 20-50 steps it is the 2nd-5th fastest, not one step that ran in a lull.
Measured (the constants below): identical runs 1.54× apart in median were 1.16× apart at the
10th percentile; with two CPU-bound processes started beside it, a run took 3.9× as long in
median and 1.31× at the 10th percentile.

Two runs also differ by what the machine did between them, which no step of one run shows,
so the interval must clear a band `m` of run-to-run drift, and the median must agree:

    faster  ⇔  fast_low  > 1 + m        and  ratio > 1 + m
    slower  ⇔  fast_high < 1 / (1 + m)  and  ratio < 1 / (1 + m)          else noise

m is QUIET_BAND when both records show the machine to themselves (analysis/run/compare.py
`band`), SHARED_BAND when either shows it shared or does not record its load. The cost: a
change that slows only a few steps (a stall every k-th step) moves neither the fast steps
nor, under half the steps, the median, and is called noise; the split table still shows it.
Pure: numbers in, numbers out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

# Drift between two runs on an idle machine: a judgement, not a measurement (this project's
# machines are never idle); `trainprof tune` keeps a knob from 3% (tune/config.py min_gain)
# because it alternates trials with the baseline, which two separate runs do not.
QUIET_BAND = 0.05
# Measured on a 2-core machine shared with other engineers' test runs (1-minute load 2.8-4.2),
# tests/integration/profile_scripts/before_after.py, 20-50 steps of ~1-3 ms, back to back:
# six identical runs (others_cpu_pct 56-87%) were up to 1.16× apart at the 10th percentile
# (1.54× in median); with two CPU-bound processes spinning, 1.31× (3.9× in median).
SHARED_BAND = 0.5
FAST_PCT = 10.0


@dataclass(frozen=True)
class NoiseTest:
    """The noise test's settings (docs/trace-analysis.md, "Diff")."""

    resamples: int = 2000
    """bootstrap resamples: the intervals' ends move about 1% between seeds at 2000 (measured on 20 steps)"""
    confidence: float = 0.95
    """two-sided confidence of the intervals"""
    seed: int = 0
    """seed of the test's own generator (never the global one)"""
    quiet_band: float = QUIET_BAND
    """run-to-run drift allowed when neither run shared the machine"""
    shared_band: float = SHARED_BAND
    """... when either shared it, or did not record its load"""
    fast_pct: float = FAST_PCT
    """the percentile of the fast steps (those no other process delayed)"""
    min_steps: int = 5
    """fewer measured steps on a side: no test (a percentile of 4 steps has no interval worth quoting)"""


@dataclass(frozen=True)
class Interval:
    ratio: float
    """median(base) / median(new): > 1 means NEW takes less time per unit"""
    low: float
    high: float
    fast_ratio: float
    """the same ratio of the fast_pct-th percentiles"""
    fast_low: float
    fast_high: float


def _boot(x: np.ndarray, rng: np.random.Generator, test: NoiseTest) -> tuple[np.ndarray, np.ndarray]:
    """The median and the fast_pct-th percentile of each resample of `x`."""
    r = x[rng.integers(0, len(x), size=(test.resamples, len(x)))]
    return np.median(r, axis=1), np.percentile(r, test.fast_pct, axis=1)


def ratio_interval(base: Sequence[float], new: Sequence[float], test: NoiseTest = NoiseTest()) -> Interval:
    """Both ratios and their percentile bootstrap intervals (each side resampled with
    replacement, independently)."""
    b, n = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    rng = np.random.default_rng(test.seed)  # private: the user's and numpy's global streams are untouched
    (mb, pb), (mn, pn) = _boot(b, rng, test), _boot(n, rng, test)
    tail = 100.0 * (1.0 - test.confidence) / 2.0
    low, high = np.percentile(mb / mn, [tail, 100.0 - tail])
    fast_low, fast_high = np.percentile(pb / pn, [tail, 100.0 - tail])
    fast = np.percentile(b, test.fast_pct) / np.percentile(n, test.fast_pct)
    return Interval(float(np.median(b) / np.median(n)), float(low), float(high), float(fast), float(fast_low),
                    float(fast_high))


def call(iv: Interval, band: float) -> str:
    """faster | slower | noise: the fast steps' interval and the median against the drift `band` (see the module)."""
    if iv.fast_low > 1.0 + band and iv.ratio > 1.0 + band:
        return "faster"
    if iv.fast_high < 1.0 / (1.0 + band) and iv.ratio < 1.0 / (1.0 + band):
        return "slower"
    return "noise"
