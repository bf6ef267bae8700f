"""The step split of `trainprof profile` (inject/clock.py) on planted event sequences: each
interval's phase is known before the code runs, and the phases add up to the step."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainprof.backends.fake import FakeBackend
from trainprof.inject.clock import B0, B1, END, F, O0, O1, PHASES, START, StepClock, split


def _split(kinds, seconds):
    got = split(kinds, seconds)
    return {k: v for k, v in got.items() if v}


def test_a_plain_loop():
    # batch 1 s, forward 2 s, backward 3 s, then optimizer.step(): pre-hook 0.5 s after backward
    # (clip_grad_norm_), the update 0.25 s → optimizer 0.75 s
    assert _split([START, F, B0, B1, O0, END], [1, 2, 3, 0.5, 0.25]) == {
        "data": 1, "forward": 2, "backward": 3, "optimizer": 0.75}


def test_gradient_accumulation_fetches_each_micro_batch_as_data():
    # two micro-batches: fetch 1 + 0.5 = 1.5 data; forward 2 + 2; backward 3 + 3; clip 0.1 + update 0.2
    got = _split([START, F, B0, B1, F, B0, B1, O0, END], [1, 2, 3, 0.5, 2, 3, 0.1, 0.2])
    assert got == pytest.approx({"data": 1.5, "forward": 4, "backward": 6, "optimizer": 0.3})


def test_a_loss_module_after_the_model_is_forward():
    # model (F) then a loss module with weights (a second root, F): both forward, 2 + 1
    assert _split([START, F, F, B0, B1, O0, END], [1, 2, 1, 3, 0, 1]) == {
        "data": 1, "forward": 3, "backward": 3, "optimizer": 1}


def test_a_lightning_closure():
    # optimizer.step(closure): O0 first (the batch was fetched before it: data 1), the closure
    # enters (0.01 other), forward 2, backward 3, then the update inside step(): optimizer 0.5
    assert _split([START, O0, F, B0, B1, END], [1, 0.01, 2, 3, 0.5]) == pytest.approx({
        "data": 1, "other": 0.01, "forward": 2, "backward": 3, "optimizer": 0.5})


def test_a_closure_with_accumulation_fetches_the_last_micro_batch_before_step():
    # micro-batch 1 outside step(); micro-batch 2 in the closure: B1 → O0 is its fetch (data)
    got = _split([START, F, B0, B1, O0, F, B0, B1, END], [1, 2, 3, 0.5, 0.01, 2, 3, 0.5])
    assert got == pytest.approx({"data": 1.5, "other": 0.01, "forward": 4, "backward": 6, "optimizer": 0.5})


def test_two_optimizers_under_a_step_marker():
    # --step-marker: both step() calls are optimizer time (0.2 + 0.1 between + 0.3); after the
    # last one, until the marked function returns, is other (a scheduler, logging): 0.4
    got = _split([START, F, B0, B1, O0, O1, O0, O1, END], [1, 2, 3, 0, 0.2, 0.1, 0.3, 0.4])
    assert got == pytest.approx({"data": 1, "forward": 2, "backward": 3, "optimizer": 0.6, "other": 0.4})


def test_no_module_forward_seen():
    # a functional model (no nn.Module with trainable parameters): its forward is other
    assert _split([START, B0, B1, O0, END], [2, 3, 0.5, 0.5]) == {"other": 2, "backward": 3, "optimizer": 1}


def test_intervals_must_match_events():
    with pytest.raises(ValueError, match="3 events need 2 intervals"):
        split([START, F, END], [1.0])


EVENTS = st.lists(st.sampled_from([F, B0, B1, O0, O1]), max_size=12)


@given(EVENTS, st.data())
def test_every_interval_goes_to_exactly_one_phase(middle, data):
    kinds = [START, *middle, END]
    seconds = data.draw(st.lists(st.floats(0, 10), min_size=len(kinds) - 1, max_size=len(kinds) - 1))
    got = split(kinds, seconds)
    assert set(got) == set(PHASES)
    assert sum(got.values()) == pytest.approx(sum(seconds))
    assert all(v >= 0 for v in got.values())


def test_step_clock_turns_marks_into_a_record():
    # CPU-like fake: host_clock and mark both read the scripted times.
    # t0 = 0, START mark 0, F at 1, B0 at 3, B1 at 6, O0 at 6.5, END at 7, host end 7.5
    be = FakeBackend([0.0, 0.0, 1.0, 3.0, 6.0, 6.5, 7.0, 7.5])
    c = StepClock(be)
    c.forward((), {}, lambda a, k: 64)
    c.backward(None)
    c.event(B1)
    c.event(O0)
    rec = c.finish(5)
    assert (rec.step, rec.step_time_s, rec.data_s, rec.forward_s, rec.backward_s) == (5, 7.5, 1.0, 2.0, 3.0)
    # optimizer: 6 → 6.5 (clip) + 6.5 → 7 (update) = 1.0; other: 7.5 − 7.0 = 0.5 after the last mark
    assert rec.optimizer_s == 1.0 and rec.other_s == 0.5 and rec.h2d_s == 0.0
    assert (rec.tokens, c.micro_batches, c.backward_passes, be.syncs) == (64, 1, 1, 1)


def test_a_micro_batch_begins_at_the_first_forward_after_a_backward():
    be = FakeBackend([float(i) for i in range(20)])
    c = StepClock(be)
    for _ in range(3):  # 3 micro-batches; the model and a loss module: 2 root forwards each
        c.forward((), {}, lambda a, k: 10)
        c.forward((), {}, lambda a, k: 999)  # not a new micro-batch: not counted
        c.backward(None)
        c.event(B1)
    assert (c.micro_batches, c.tokens, c.backward_passes) == (3, 30, 3)
