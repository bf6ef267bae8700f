"""`trainprof diff`'s verdict on two runs (analysis/run/noise.py, compare.py): the noise test on
planted step-time distributions, and the per-token/per-sample rule on numbers worked by hand."""

from __future__ import annotations

import random

import numpy as np
import pytest

from trainprof.analysis.run.compare import Load, compare_runs, load_of, verdict
from trainprof.analysis.run.noise import NoiseTest, call, ratio_interval
from trainprof.recordtypes.run import DeviceInfo, RunRecord, StepRecord, Summary
from trainprof.recordtypes.run_parts import Profile

from tests.unit.diagnose.run_records import system_block

QUIET = (Load([], 2.0, 0.0), Load([], 2.0, 0.0))  # both runs recorded their load, no sign of contention
PHASES = ("data_s", "h2d_s", "forward_s", "backward_s", "optimizer_s", "other_s")


def _lognormal(seed: int, n: int, median: float, sigma: float) -> list[float]:
    return list(median * np.exp(np.random.default_rng(seed).normal(0.0, sigma, n)))


def _run(times: list[float], units: int, unit: str | None = "samples", system: dict | None = None,
         split: dict | None = None) -> RunRecord:
    steps = [StepRecord(step=i, step_time_s=t, data_s=0.0, h2d_s=0.0, forward_s=t, backward_s=0.0, optimizer_s=0.0,
                        other_s=0.0, tokens=units, loss=None) for i, t in enumerate(times)]
    mean = sum(times) / len(times)
    summary = Summary(measured_steps=len(times), warmup_steps=0, step_time_s=mean,
                      step_time_median_s=float(np.median(times)),
                      **{p: (split or {}).get(p, mean if p == "forward_s" else 0.0) for p in PHASES},
                      tokens_per_step=units, tokens_per_s=units / mean, flops_per_step=0, hardware_flops_per_step=0,
                      tflops=0.0, hardware_tflops=0.0, mfu=None, hfu=None, peak_memory_bytes=None,
                      peak_memory_kind="unknown", loss_first=None, loss_last=None)
    dev = DeviceInfo(name="cpu", kind="cpu", spec_key=None, peak_dtype="fp32", peak_tflops=None, peak_source="unknown")
    return RunRecord(device=dev, model={}, config={}, steps=steps, summary=summary, environment={"cpu_count": 2},
                     system=system_block(system) if system else None, profile=Profile(batch_unit=unit) if unit else None)


def test_two_samples_of_one_distribution_are_noise():
    # 40 steps each of one log-normal (median 10 ms, 10% spread), different seeds
    base, new = _lognormal(1, 40, 0.010, 0.1), _lognormal(2, 40, 0.010, 0.1)
    iv = ratio_interval(base, new)
    assert iv.low < 1.0 < iv.high  # the interval holds "no change"
    assert call(iv, NoiseTest().quiet_band) == "noise"


def test_a_20_pct_shift_with_small_spread_is_faster_and_reversed_slower():
    # NEW's steps take 1/1.2 of BASE's (a 1.2× speed-up), 2% spread
    base, new = _lognormal(1, 40, 0.012, 0.02), _lognormal(2, 40, 0.010, 0.02)
    iv = ratio_interval(base, new)
    assert 1.15 < iv.low <= iv.ratio <= iv.high < 1.25 and 1.15 < iv.fast_low <= iv.fast_high < 1.25
    assert call(iv, 0.05) == "faster" and call(ratio_interval(new, base), 0.05) == "slower"
    # the same shift on a contended machine (±50% drift between runs): not told from it
    assert call(iv, 0.5) == "noise"


def test_ratio_of_medians_by_hand_and_the_callers_random_streams_untouched():
    random.seed(7)
    np.random.seed(7)
    py_state, np_state = random.getstate(), np.random.get_state()[1].copy()
    iv = ratio_interval([4.0, 4.0, 4.0, 4.0, 4.0], [2.0, 2.0, 2.0, 2.0, 2.0])
    # medians 4 and 2: 2.0×, and every resample of constant samples gives 2.0 too, at the fast steps as well
    assert (iv.ratio, iv.low, iv.high) == (2.0, 2.0, 2.0) == (iv.fast_ratio, iv.fast_low, iv.fast_high)
    assert random.getstate() == py_state and (np.random.get_state()[1] == np_state).all()
    # seeded: the same records always give the same interval
    a, b = _lognormal(3, 30, 1.0, 0.3), _lognormal(4, 30, 1.0, 0.3)
    assert ratio_interval(a, b) == ratio_interval(a, b)


def test_four_times_the_batch_is_compared_per_sample():
    # BASE: 16 samples in 1.0 ms steps (62.5 µs/sample); NEW: 64 samples in 2.0 ms (31.25 µs/sample)
    base = _run([0.001] * 10, 16, system=_sys(others=2.0))
    new = _run([0.002] * 10, 64, system=_sys(others=2.0))
    load = (_load(base), _load(new))
    assert load == QUIET
    v = verdict(base, new, load)
    # per sample 62.5 / 31.25 = 2.0× the throughput, though each step takes 2× as long
    assert v.per == "sample" and v.ratio == pytest.approx(2.0) and v.call == "faster"
    assert v.band == NoiseTest().quiet_band and "4.00× the samples" in v.why
    runs = compare_runs(base, new, ("a/run.json", "b/run.json"), load)
    assert runs.base.units_per_s == pytest.approx(16_000) and runs.new.units_per_s == pytest.approx(32_000)
    assert runs.new.step_median_s == 0.002 and runs.split["forward_s"].new_us_per_step == pytest.approx(2000.0)


def test_equal_work_is_compared_per_step_and_tokens_is_the_default_unit():
    base, new = _run([0.003] * 8, 512, unit=None), _run([0.002] * 8, 512, unit=None)  # `trainprof run`: tokens
    v = verdict(base, new, QUIET)
    assert v.per == "step" and v.ratio == pytest.approx(1.5) and "512 tokens" in v.why


def test_the_load_sets_the_band():
    # a 1.2× speed-up, 2% spread: the interval is tight; the band decides
    times_b, times_n = _lognormal(1, 40, 0.012, 0.02), _lognormal(2, 40, 0.010, 0.02)
    base = _run(times_b, 16, system=_sys(others=2.0))
    quiet, shared = (_run(times_n, 16, system=_sys(others=o)) for o in (2.0, 60.0))
    bare = _run(times_n, 16, system=None)  # --system-interval 0 / an older record: the load unknown
    loads = [_load(r) for r in (base, quiet, shared, bare)]
    assert loads[0].signs == [] and "other processes used 60%" in loads[2].signs[0] and loads[3] is None
    t = NoiseTest()
    v = verdict(base, quiet, (loads[0], loads[1]))  # neither shared: 1.2× is beyond 1.05×
    assert (v.call, v.band) == ("faster", t.quiet_band)
    v = verdict(base, shared, (loads[0], loads[2]))  # one shared: 1.2× is within 1.5×
    assert (v.call, v.band) == ("noise", t.shared_band) and "was shared" in v.why
    v = verdict(base, bare, (loads[0], loads[3]))  # unknown: the shared band, said so
    assert (v.call, v.band) == ("noise", t.shared_band) and "not recorded in NEW" in v.why


def test_steps_that_waited_for_a_core_move_the_median_not_the_fast_steps():
    # both runs 2.5 ms when they have a core (2% spread); in NEW 35 of 50 steps waited ~7.5 ms
    # for one (two spinning processes): median 2.5 -> ~10 ms, 10th percentile unmoved
    fast_b, fast_n = _lognormal(1, 50, 0.0025, 0.02), _lognormal(2, 50, 0.0025, 0.02)
    waited = [t + 0.0075 if i % 10 < 7 else t for i, t in enumerate(fast_n)]
    iv = ratio_interval(fast_b, waited)
    assert iv.high < 0.5 and 0.9 < iv.fast_low <= iv.fast_high < 1.1  # the median says 4× slower, the fast steps ~1×
    assert call(iv, NoiseTest().shared_band) == "noise"
    v = verdict(_run(fast_b, 16, system=_sys(60.0)), _run(waited, 16, system=_sys(85.0)),
                (Load(["shared"], 60.0, 0.0), Load(["shared"], 85.0, 0.0)))
    assert v.call == "noise" and "the fast steps (the 10th percentile) 1.00×" in v.why
    # a real 2× speed-up under the same waits moves both: faster
    halved = [t / 2 for t in fast_b]
    waits_b = [t + 0.0075 if i % 10 < 7 else t for i, t in enumerate(fast_b)]
    waits_n = [t + 0.0075 / 2 if i % 10 < 7 else t for i, t in enumerate(halved)]
    assert call(ratio_interval(waits_b, waits_n), NoiseTest().shared_band) == "faster"


def test_too_few_steps_or_unlike_units_are_not_tested():
    assert verdict(_run([0.001] * 4, 16), _run([0.001] * 4, 16), QUIET).call == "untested"
    v = verdict(_run([0.001] * 8, 16, unit="samples"), _run([0.001] * 8, 512, unit="tokens"), QUIET)
    assert v.call == "untested" and "cannot be put in one unit" in v.why


def _load(run: RunRecord) -> Load | None:
    return load_of(run, 10.0, 5.0, 1.0)  # diagnose.Thresholds' contention defaults


def _sys(others: float) -> dict:
    return {"summary": {"others_cpu_pct": {"mean": others, "max": others}, "steal_pct": {"mean": 0.0, "max": 0.0},
                        "load_avg_1m": {"mean": 0.5, "max": 0.5}}}
