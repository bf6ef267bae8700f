"""Energy integrals on synthetic power traces, by hand."""

import pytest

from trainprof.analysis.run.energy import counter_delta, integrate_power


def test_constant_power_is_power_times_time():
    assert integrate_power([0, 2, 10], [300, 300, 300]) == (pytest.approx(3000.0), 1.0)


def test_ramp_is_the_trapezoid_area():
    # P(t) = 10 t W for t in [0, 10]: ∫ = 5 t² → 500 J
    assert integrate_power([0, 5, 10], [0, 50, 100])[0] == pytest.approx(500.0)


def test_window_ends_are_interpolated():
    # ∫_{2.5}^{7.5} 10 t dt = 5 (7.5² − 2.5²) = 250 J, with no sample at either end
    joules, coverage = integrate_power([0, 5, 10], [0, 50, 100], 2.5, 7.5)
    assert joules == pytest.approx(250.0) and coverage == 1.0


def test_square_wave_between_samples():
    # 100 W for 1 s then 300 W for 1 s, sampled at the edges: the line joins them
    assert integrate_power([0, 1, 1, 2], [100, 100, 300, 300])[0] == pytest.approx(400.0)


def test_window_outside_the_samples_is_clipped_and_said():
    joules, coverage = integrate_power([0, 10], [100, 100], -10, 10)
    assert joules == pytest.approx(1000.0) and coverage == pytest.approx(0.5)
    assert integrate_power([0, 10], [100, 100], 20, 30) == (0.0, 0.0)


def test_counter_is_read_at_both_ends():
    # cumulative joules 0, 1000, 3000 at 0, 1, 2 s: at 0.5 → 500, at 1.5 → 2000
    assert counter_delta([0, 1, 2], [0, 1000, 3000], 0.5, 1.5) == (pytest.approx(1500.0), 1.0)
    assert counter_delta([0, 1, 2], [0, 1000, 3000])[0] == pytest.approx(3000.0)


@pytest.mark.parametrize("ts,ys,msg", [
    ([0], [1], "two samples"), ([0, 2, 1], [1, 1, 1], "must not decrease"), ([0, 1], [1], "equal length")])
def test_bad_series(ts, ys, msg):
    with pytest.raises(ValueError, match=msg):
        integrate_power(ts, ys)


def test_window_backwards():
    with pytest.raises(ValueError, match="ends before it starts"):
        integrate_power([0, 1], [1, 1], 1, 0)
