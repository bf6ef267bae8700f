import pytest

from trainprof.analysis.run.throughput import default_warmup, per_second, summarise, tflops, utilisation
from trainprof.recordtypes.run import StepRecord


def step(i, t, tokens=1000, loss=None, **phases):
    base = dict(data_s=0.0, h2d_s=0.0, forward_s=0.0, backward_s=0.0, optimizer_s=0.0, other_s=0.0)
    base.update(phases)
    return StepRecord(step=i, step_time_s=t, tokens=tokens, loss=loss, **base)


def test_tflops_and_mfu_by_hand():
    # 312e12 FLOPs in 2 s = 156 TFLOP/s = 50% of an A100's 312 bf16 peak.
    assert tflops(312e12, 2.0) == pytest.approx(156.0)
    assert utilisation(312e12, 2.0, 312.0) == pytest.approx(0.5)
    assert per_second(4096, 0.5) == 8192


def test_unknown_peak_gives_no_mfu():
    assert utilisation(1e12, 1.0, None) is None


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_bad_durations_and_peaks_raise(bad):
    with pytest.raises(ValueError):
        per_second(1, bad)
    with pytest.raises(ValueError):
        utilisation(1, 1.0, bad)


def test_summary_skips_warmup_and_divides_totals():
    steps = [step(0, 10.0, loss=5.0), step(1, 1.0, forward_s=0.25, loss=4.0),
             step(2, 3.0, forward_s=0.75, loss=3.0)]
    s = summarise(steps, flops_per_step=2e12, hardware_flops_per_step=3e12, peak_tflops=2.0,
                  warmup_steps=1)
    assert s.measured_steps == 2 and s.warmup_steps == 1
    assert s.step_time_s == pytest.approx(2.0)  # (1 + 3) / 2
    assert s.step_time_median_s == pytest.approx(2.0)
    assert s.forward_s == pytest.approx(0.5)
    assert s.tokens_per_s == pytest.approx(500.0)  # 2000 tokens / 4 s
    assert s.tflops == pytest.approx(1.0)  # 4e12 / 4 s
    assert s.mfu == pytest.approx(0.5)
    assert s.hfu == pytest.approx(0.75)  # 6e12 / 4 s / 2 TFLOP/s
    assert (s.loss_first, s.loss_last) == (5.0, 3.0)  # losses span all steps


def test_summary_always_keeps_one_step():
    s = summarise([step(0, 2.0)], flops_per_step=1e12, peak_tflops=None, warmup_steps=5)
    assert s.measured_steps == 1 and s.mfu is None and s.hfu is None
    assert default_warmup(1, 5) == 0 and default_warmup(10, 3) == 3 and default_warmup(0) == 0


def test_summary_rejects_no_steps():
    with pytest.raises(ValueError):
        summarise([], flops_per_step=1.0, peak_tflops=1.0)
