import pytest

from trainprof.backends.fake import FakeBackend
from trainprof.collect.timers import StepTimer


def test_split_is_exact_with_a_scripted_clock():
    # start, data in/out, h2d in/out, fwd in/out, bwd in/out, opt in/out, stop
    times = [0.0, 0.0, 0.5, 0.5, 0.6, 0.6, 1.6, 1.6, 3.6, 3.6, 3.9, 4.0]
    be = FakeBackend(times)
    t = StepTimer(be)
    t.start()
    for name in ("data", "h2d", "forward", "backward", "optimizer"):
        with t.phase(name):
            pass
    r = t.stop(step=0, tokens=100, loss=2.5)
    assert r.step_time_s == 4.0
    assert (r.data_s, r.h2d_s, r.forward_s, r.backward_s) == pytest.approx((0.5, 0.1, 1.0, 2.0))
    assert r.optimizer_s == pytest.approx(0.3)
    assert r.other_s == pytest.approx(0.1)  # 4.0 - 3.9: time outside every phase
    assert r.loss == 2.5 and r.tokens == 100
    assert be.syncs == 1  # exactly one synchronize per step


def test_repeated_phases_add_up_for_gradient_accumulation():
    times = [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0]
    t = StepTimer(FakeBackend(times))
    t.start()
    for _ in range(2):
        with t.phase("forward"):
            pass
        with t.phase("forward"):
            pass
    r = t.stop(step=3, tokens=1)
    assert r.forward_s == pytest.approx(4.0) and r.other_s == pytest.approx(0.0)


def test_misuse_is_an_error():
    t = StepTimer(FakeBackend([0.0] * 10))
    with pytest.raises(RuntimeError):
        with t.phase("forward"):
            pass
    t.start()
    with pytest.raises(ValueError):
        with t.phase("warp"):
            pass
    with pytest.raises(RuntimeError):
        t.start()
