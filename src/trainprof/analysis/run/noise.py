"""Is a before/after change bigger than the noise? (`trainprof diff` on two run folders.)

The test: a percentile bootstrap confidence interval of the ratio of medians,

    ratio = median(base time per unit) / median(new time per unit)     (> 1: NEW is faster)

resampling each run's measured steps independently (`resamples` times, a private seeded
generator: the same records always give the same interval). Why this and not a Mann-Whitney
rank test: it gives the interval in the unit the verdict is read in ("1.19×, 95% CI
0.91–1.52×") rather than a p-value, the median is the figure run.json already summarises a run
by (`summary.step_time_median_s`) and is not moved by the few descheduled steps of a shared
machine, and a rank test on hundreds of steps calls a 1% shift "significant" that no user
would act on.

The interval only sees the spread *within* each run. Two runs also differ by what the
machine did between them, which the steps of one run cannot show; so a change is measurable
only when the interval clears a band `m` of run-to-run drift *and* the fast steps moved too:

    faster  ⇔  ci_low  > 1 + m        and  fast_ratio > 1 + m
    slower  ⇔  ci_high < 1 / (1 + m)  and  fast_ratio < 1 / (1 + m)         else noise

fast_ratio is the ratio of the two runs' FAST_PCT-th percentiles. On a machine whose cores
other processes want, a step waits for a core now and then: the median moves with the load,
the fastest steps (those that did not wait) hardly do, timeit's reason for its minimum. A
real change moves both; the load moves the median alone. Measured (the constants below):
identical runs 1.54× apart in median were 1.16× apart in fast steps; with two CPU-bound
processes started, 3.9× in median, 1.31× in fast steps. The cost: a change that slows only
a few steps (a stall every k-th step) moves the median and not the fast steps, and is called
noise; the split table still shows it.

m is QUIET_BAND when both records show the machine to themselves (analysis/run/compare.py
`band`), SHARED_BAND when either shows it shared or does not record its load. Pure: numbers
in, numbers out.
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
# six identical runs whose others_cpu_pct were 56-87% differed by up to 1.54× in median step
# (0.539 vs 0.829 ms; 1.16× in 10th percentile). The same run with two CPU-bound processes
# spinning took 3.9× as long in median (2.90 vs 11.30 ms) and 1.31× in 10th percentile: only
# the percentile guard tells that from a change, and the band must exceed its 1.31×.
SHARED_BAND = 0.5
# The fast steps: the 10th percentile. With 20-50 steps, the 2nd-5th fastest, not the single
# fastest (one step that ran during a lull, or held a smaller last batch).
FAST_PCT = 10.0


@dataclass(frozen=True)
class NoiseTest:
    """The noise test's settings (docs/trace-analysis.md, "Diff")."""

    resamples: int = 2000
    """bootstrap resamples: the interval's ends move about 1% between seeds at 2000 (measured on 20 steps)"""
    confidence: float = 0.95
    """two-sided confidence of the interval"""
    seed: int = 0
    """seed of the test's own generator (never the global one)"""
    quiet_band: float = QUIET_BAND
    """run-to-run drift allowed when neither run shared the machine"""
    shared_band: float = SHARED_BAND
    """... when either shared it, or did not record its load"""
    fast_pct: float = FAST_PCT
    """the percentile whose ratio must clear the band too (the steps no other process delayed)"""
    min_steps: int = 5
    """fewer measured steps on a side: no test (a median of 4 steps has no interval worth quoting)"""


@dataclass(frozen=True)
class Interval:
    ratio: float
    """median(base) / median(new): > 1 means NEW takes less time per unit"""
    low: float
    high: float
    fast_ratio: float
    """the same ratio of the fast_pct-th percentiles"""


def ratio_interval(base: Sequence[float], new: Sequence[float], test: NoiseTest = NoiseTest()) -> Interval:
    """The ratio of medians and its percentile bootstrap interval (each side resampled with
    replacement, independently)."""
    b, n = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    rng = np.random.default_rng(test.seed)  # private: the user's and numpy's global streams are untouched
    mb = np.median(b[rng.integers(0, len(b), size=(test.resamples, len(b)))], axis=1)
    mn = np.median(n[rng.integers(0, len(n), size=(test.resamples, len(n)))], axis=1)
    ratios = mb / mn
    tail = 100.0 * (1.0 - test.confidence) / 2.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    fast = float(np.percentile(b, test.fast_pct) / np.percentile(n, test.fast_pct))
    return Interval(float(np.median(b) / np.median(n)), float(low), float(high), fast)


def call(iv: Interval, band: float) -> str:
    """faster | slower | noise: the interval and the fast steps against the drift `band` (see the module)."""
    if iv.low > 1.0 + band and iv.fast_ratio > 1.0 + band:
        return "faster"
    if iv.high < 1.0 / (1.0 + band) and iv.fast_ratio < 1.0 / (1.0 + band):
        return "slower"
    return "noise"
