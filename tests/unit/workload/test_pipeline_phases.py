"""Under --pp a stage's step is split between the Monitor's phases (workload/pipeline.py
Split): each micro-batch's backward is `backward`, the rest of the schedule `forward`. A
scripted clock (backends/fake.py) gives the answer by hand, without processes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from trainprof.backends.fake import FakeBackend
from trainprof.collect.timers import StepTimer
from trainprof.workload import pipeline


def test_gpipe_stage_split_by_hand():
    # the clock at each mark: step start; forward opens; m = 2 backwards (each closes forward,
    # opens and closes backward, reopens forward); forward closes; step stop
    times = [0.0, 0.5, 6.5, 6.5, 9.5, 9.5, 10.0, 10.0, 13.0, 13.0, 13.5, 14.0]
    timer = StepTimer(FakeBackend(times))
    mod = SimpleNamespace(split=None)
    calls = []
    stage = SimpleNamespace(forward_one_chunk=lambda i, *a: calls.append(("f", i)),
                            backward_one_chunk=lambda i, *a, **k: calls.append(("b", i)))
    pipeline.mark_microbatches(stage, mod)
    timer.start()
    with pipeline.timed(mod, timer.phase):  # what Job.pipelined runs the schedule in
        for i in range(2):
            stage.forward_one_chunk(i)
        for i in (1, 0):
            stage.backward_one_chunk(i, last_backward=i == 0)
    r = timer.stop(step=0, tokens=1)
    assert calls == [("f", 0), ("f", 1), ("b", 1), ("b", 0)]
    assert r.backward_s == pytest.approx(3.0 + 3.0)
    assert r.forward_s == pytest.approx(6.0 + 0.5 + 0.5)  # the forwards, and the waits between backwards
    assert r.other_s == pytest.approx(0.5 + 0.5)  # outside the schedule
    # the parts add up to the step: nothing of the schedule counted twice or lost
    parts = r.data_s + r.h2d_s + r.forward_s + r.backward_s + r.optimizer_s + r.other_s
    assert r.step_time_s == pytest.approx(14.0) and parts == pytest.approx(r.step_time_s)
    assert mod.split is None
    with pipeline.timed(mod, None):  # an untimed step (Job.step, warm-up): no phase entered
        stage.backward_one_chunk(0)
