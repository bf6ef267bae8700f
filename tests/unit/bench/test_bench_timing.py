"""The timing loop with a scripted clock: exact answers, no real time."""

import pytest

from trainprof.backends.fake import FakeBackend
from trainprof.bench.timing import rates, summarize, time_calls


def test_marks_bracket_each_call_and_flush_is_not_timed():
    calls = []
    # marks: (0, 1), (10, 13), (20, 22): the flush between pairs falls outside every interval
    fb = FakeBackend(times=[-1.0, 0.0, 1.0, 10.0, 13.0, 20.0, 22.0])
    times = time_calls(lambda: calls.append("fn"), fb, warmup=2, iters=3,
                       flush=lambda: calls.append("flush"))
    assert times == [1.0, 3.0, 2.0]
    assert calls == ["fn", "fn"] + ["flush", "fn"] * 3
    assert fb.syncs >= 2  # after warm-up and at the end


def test_budget_stops_after_at_least_three_calls():
    # host_clock at start is 0; every mark advances 1 s; the budget of 2.5 s is spent by call 3
    fb = FakeBackend(times=[float(i) for i in range(100)])
    times = time_calls(lambda: None, fb, warmup=0, iters=50, budget_s=2.5)
    assert len(times) == 3


def test_summary_and_rates():
    st = summarize([2.0, 1.0, 3.0, 2.0])
    assert st == {"iters": 4, "mean_s": 2.0, "median_s": 2.0, "min_s": 1.0, "max_s": 3.0}
    r = rates(4e12, st, 1e12, "tflops")
    assert r == {"tflops_mean": 2.0, "tflops_median": 2.0, "tflops_max": 4.0}
    with pytest.raises(ValueError):
        summarize([])
