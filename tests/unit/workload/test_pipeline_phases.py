"""Under --pp a stage's step is split between the Monitor's phases (workload/pipeline.py
Split): each micro-batch's forward (and the last stage's loss) is `forward`, its backward
`backward`, the rest of the schedule (receives, sends, the bubble) `pipeline`. A scripted
clock (backends/fake.py) gives the answer by hand, without processes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from msgspec import UNSET

from trainprof.backends.fake import FakeBackend
from trainprof.collect.timers import StepTimer
from trainprof.workload import pipeline


def test_gpipe_stage_split_by_hand():
    # the clock at each mark: step start; the pipeline's wait opens; each forward, the loss and
    # each backward close the wait, open and close their phase, reopen the wait (4 marks); the
    # wait closes; step stop
    times = [0.0, 0.5,
             1.0, 1.0, 3.0, 3.0,  # forward 0: waited 0.5, ran 2.0
             3.5, 3.5, 5.5, 5.5,  # forward 1: waited 0.5, ran 2.0
             5.5, 5.5, 6.0, 6.0,  # the loss (computed by the schedule, outside forward_one_chunk): 0.5
             7.0, 7.0, 10.0, 10.0,  # backward 1: waited 1.0 (the bubble), ran 3.0
             10.5, 10.5, 13.5, 13.5,  # backward 0: waited 0.5, ran 3.0
             14.0, 14.5]
    timer = StepTimer(FakeBackend(times))
    mod = SimpleNamespace(split=None)
    calls = []
    stage = SimpleNamespace(forward_one_chunk=lambda i, *a: calls.append(("f", i)),
                            backward_one_chunk=lambda i, *a, **k: calls.append(("b", i)))
    pipeline.mark_microbatches(stage, mod)
    loss = pipeline.staged_loss(mod)
    timer.start()
    with pipeline.timed(mod, timer.phase):  # what Job.pipelined runs the schedule in
        for i in range(2):
            stage.forward_one_chunk(i)
        loss(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.long))
        for i in (1, 0):
            stage.backward_one_chunk(i, last_backward=i == 0)
    r = timer.stop(step=0, tokens=1)
    assert calls == [("f", 0), ("f", 1), ("b", 1), ("b", 0)]
    assert r.forward_s == pytest.approx(2.0 + 2.0 + 0.5)  # the forwards and the loss
    assert r.backward_s == pytest.approx(3.0 + 3.0)
    assert r.pipeline_s == pytest.approx(0.5 + 0.5 + 0.0 + 1.0 + 0.5 + 0.5)  # the waits between them
    assert r.other_s == pytest.approx(0.5 + 0.5)  # outside the schedule
    # the parts add up to the step: nothing of the schedule counted twice or lost
    parts = r.data_s + r.h2d_s + r.forward_s + r.backward_s + r.optimizer_s + r.pipeline_s + r.other_s
    assert r.step_time_s == pytest.approx(14.5) and parts == pytest.approx(r.step_time_s)
    assert mod.split is None
    with pipeline.timed(mod, None):  # an untimed step (Job.step, warm-up): no phase entered
        stage.backward_one_chunk(0)


def test_a_step_without_a_pipeline_has_no_pipeline_field():
    """Every record but a --pp stage's stays as it was written before the field existed."""
    timer = StepTimer(FakeBackend([0.0, 0.0, 1.0, 1.5]))
    timer.start()
    with timer.phase("forward"):
        pass
    r = timer.stop(step=0, tokens=1)
    assert r.pipeline_s is UNSET and r.forward_s == 1.0 and r.other_s == pytest.approx(0.5)
    import msgspec

    assert b"pipeline_s" not in msgspec.json.encode(r)
