"""Two runs' measured steps compared (run.json of `trainprof run` / `profile`): the verdict
of `trainprof diff` and the step split it opens with.

**Per what.** When both runs' steps hold the same work (`summary.tokens_per_step`), each
step's time is compared as it is. When they differ (a 4× batch), a step time ratio reads the
bigger step as a slowdown while throughput rose, so each step's time is divided by the tokens
(or samples: `profile.batch_unit`) it held, and the ratio of medians is a throughput ratio.

**Beyond the noise.** analysis/run/noise.py: bootstrap intervals of that ratio at the median
and at the fast steps, which must clear the run-to-run drift the two runs' load allows
(`band`: the contended_machine rule's signs).

The split is run.json's `summary.<phase>` (the mean over the measured steps: the figure the
run's own report shows), per step: data wait, host-to-device copy, forward, backward,
optimizer, other.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from trainprof.analysis.run.noise import NoiseTest, call, ratio_interval
from trainprof.analysis.run.step_split import contention, measured, phases, seconds
from trainprof.recordtypes.diff import Pair, Runs, RunSide, Verdict
from trainprof.recordtypes.run import RunRecord, StepRecord

UNIT = {"tokens": "token", "samples": "sample"}
_LOAD_KEYS = ("others_cpu_pct", "steal_pct", "load_avg_1m")


def unit(run: RunRecord) -> str:
    """What the run counts per step: tokens, or samples (`trainprof profile` of a model fed features)."""
    return run.batch_unit


@dataclass(frozen=True)
class Load:
    """What a run.json records of the machine's load over its measured steps."""

    signs: list[str]
    """the contended_machine rule's signs of sharing, in words (empty: the run had the machine)"""
    others_cpu_pct: float | None
    """mean share of all cores' time other processes took"""
    steal_pct: float | None


def load_of(run: RunRecord, others_cpu_pct: float, steal_pct: float, load_per_core: float) -> Load | None:
    """The run's load; None when run.json records none (an older record, `--system-interval
    0`). The thresholds are diagnose.Thresholds' contention_* (docs/rules.md); the step-time
    spread, the rule's fourth sign, is left out: the interval already holds it."""
    summary = run.system_summary
    if summary is None or not any(getattr(summary, k) for k in _LOAD_KEYS):
        return None
    mean = {k: getattr(getattr(summary, k), "mean", None) for k in ("others_cpu_pct", "steal_pct")}
    return Load(contention(run, math.inf, others_cpu_pct, steal_pct, load_per_core),
                mean["others_cpu_pct"], mean["steal_pct"])


def band(loads: tuple[Load | None, Load | None], test: NoiseTest = NoiseTest()) -> tuple[float, str]:
    """The run-to-run drift the two loads allow (analysis/run/noise.py), and why, in words."""
    b, n = loads
    if b is None or n is None:
        where = " and ".join(k for k, v in (("BASE", b), ("NEW", n)) if v is None)
        m = test.shared_band
        return m, (f"the machine's load is not recorded in {where} (run.json has no system samples): "
                   f"a change under {1 + m:g}× either way is not told from the drift between runs")
    if not b.signs and not n.signs:
        m = test.quiet_band
        return m, f"neither run shared the machine: a change under {1 + m:g}× either way is run-to-run noise"
    m = test.shared_band
    said = "; ".join(f"{k}: {', '.join(v.signs)}" for k, v in (("BASE", b), ("NEW", n)) if v.signs)
    return m, f"the machine was shared ({said}): a change under {1 + m:g}× either way is not told from its drift"


def per_unit(steps: Sequence[StepRecord], per_step_units: float, by_unit: bool) -> list[float]:
    """Each step's time, divided by the units it held when `by_unit` (a step that recorded
    none is counted as holding the run's `per_step_units`)."""
    if not by_unit:
        return [float(s.step_time_s) for s in steps]
    return [float(s.step_time_s) / (s.tokens or per_step_units) for s in steps]


def verdict(base: RunRecord, new: RunRecord, loads: tuple[Load | None, Load | None],
            test: NoiseTest = NoiseTest()) -> Verdict:
    """Is NEW faster than BASE beyond the noise (the module's rule)?"""
    ub, un = base.summary.tokens_per_step, new.summary.tokens_per_step
    kb, kn = unit(base), unit(new)
    sb = measured(base.steps, base.summary.warmup_steps)
    sn = measured(new.steps, new.summary.warmup_steps)
    if ub == un:
        per, why = "step", [f"both steps hold {ub:g} {kb}: compared per step"]
    elif kb != kn or not ub or not un:
        return Verdict(call="untested", per="step", why=f"the steps hold different work ({ub:g} {kb} vs {un:g} {kn}) "
                       "that cannot be put in one unit: their times do not compare")
    else:
        per = UNIT.get(kb, kb)
        why = [f"NEW's steps hold {un / ub:.2f}× the {kb} ({un:g} vs {ub:g}): compared per {per} (throughput), "
               "since a bigger step takes longer even when it does more per second"]
    if min(len(sb), len(sn)) < test.min_steps:
        return Verdict(call="untested", per=per, why=f"{len(sb)} and {len(sn)} measured steps: fewer than "
                       f"{test.min_steps} on a side give no interval worth quoting; measure more steps (--steps)")
    iv = ratio_interval(per_unit(sb, ub, per != "step"), per_unit(sn, un, per != "step"), test)
    m, words = band(loads, test)
    why.append(words)
    said = call(iv, m)
    if said == "noise" and not (1 / (1 + m) <= iv.ratio <= 1 + m):  # the median moved, the fast steps not as far
        why.append(f"the median step moved {iv.ratio:.2f}× but the fast steps (the {test.fast_pct:g}th percentile) "
                   f"{iv.fast_ratio:.2f}× (95% CI {iv.fast_low:.2f}–{iv.fast_high:.2f}×): steps that waited for a core "
                   "moved the median, not the change")
    return Verdict(call=said, per=per, ratio=iv.ratio, ci_low=iv.low, ci_high=iv.high, fast_ratio=iv.fast_ratio,
                   fast_ci_low=iv.fast_low, fast_ci_high=iv.fast_high, confidence=test.confidence, band=m,
                   why="; ".join(why))


def _side(run: RunRecord, path: str, steps: list[StepRecord], load: Load | None) -> RunSide:
    per = per_unit(steps, run.summary.tokens_per_step, True) if run.summary.tokens_per_step and steps else []
    med = statistics.median(per) if per else 0.0
    return RunSide(run=path, steps=len(steps), step_median_s=run.summary.step_time_median_s, unit=unit(run),
                   units_per_step=run.summary.tokens_per_step, units_per_s=1.0 / med if med else None,
                   load=load.signs if load else None, others_cpu_pct=load.others_cpu_pct if load else None)


def _pair(b: float, a: float) -> Pair:
    return Pair(base_us_per_step=b, new_us_per_step=a, delta_us_per_step=a - b)


def compare_runs(base: RunRecord, new: RunRecord, paths: tuple[str, str],
                 loads: tuple[Load | None, Load | None]) -> Runs:
    """The two runs side by side: what the verdict read of each, and the step split (µs per step)."""
    sb = measured(base.steps, base.summary.warmup_steps)
    sn = measured(new.steps, new.summary.warmup_steps)
    split = {p: _pair(1e6 * seconds(base.summary, p), 1e6 * seconds(new.summary, p))
             for p in phases(base.summary, new.summary)}
    return Runs(base=_side(base, paths[0], sb, loads[0]), new=_side(new, paths[1], sn, loads[1]), split=split)
