"""The gradient-accumulation speed knob (issue #41) for real on the tiny preset, in this process
(one thread: ~0.1 s a run): the trial sees K× the tokens per optimizer step and the baseline's
tokens in all, its speed is per token, and the guard compares it at the same tokens seen."""

from __future__ import annotations

import dataclasses
import json

import pytest

from trainprof.jobs.tune import trial_result
from trainprof.tune import LadderConfig, run_ladder
from trainprof.tune.catalogue import ACCUM_K, by_name
from trainprof.tune.journal import Journal
from trainprof.workload.config import TrainConfig
from trainprof.workload.trainer import train

pytestmark = pytest.mark.slow  # trains the workload (in this process): seconds

TINY = TrainConfig(preset="tiny", device="cpu", micro_batch=2, seq_len=32, steps=6, warmup_steps=1, eval_batches=1,
                   dtype="fp32", seed=1337, threads=1).resolved()


def test_grad_accum_speed_sees_k_times_the_tokens_per_step_and_compares_per_token(tmp_path):
    r = run_ladder(lambda cfg: trial_result(train(cfg)), by_name(["grad_accum_speed"]), TINY,
                   LadderConfig(device="cpu", verify_trials=0, min_gain=-1.0), Journal(tmp_path / "j.jsonl"))
    (t,), base = r.trials, r.baseline
    assert t.ok and not t.skipped and t.same_math is False
    assert {k: t.config[k] for k in ("micro_batch", "grad_accum", "steps")} == {"micro_batch": 2, "grad_accum": 2,
                                                                                 "steps": 3}
    assert t.tokens_per_step == ACCUM_K * base["tokens_per_step"] == ACCUM_K * 2 * 32
    assert t.tokens_per_step * 3 == base["tokens_per_step"] * TINY.steps  # the same tokens seen
    # per token, not per step: a step is K× the tokens, so tokens/s = tokens per step / median step
    assert t.tokens_per_s == pytest.approx(t.tokens_per_step / t.step_time_s)
    assert t.speedup == pytest.approx(t.tokens_per_s / base["tokens_per_s"])
    # the guard's evidence, recomputed from the journal's two trajectories at the same tokens:
    # the trial's step i against the mean of the baseline's steps 2i, 2i+1 (the same micro-batches)
    lines = [json.loads(x) for x in (tmp_path / "j.jsonl").read_text().splitlines()]
    mine = next(e for e in lines if e["knob"] == "grad_accum_speed")["losses"]
    theirs = base["losses"]
    want = sum(abs(mine[i] - (theirs[2 * i] + theirs[2 * i + 1]) / 2) for i in range(3)) / 3
    assert t.loss_deviation == pytest.approx(want)
    assert t.val_delta == pytest.approx(t.val_loss - base["val_loss"])  # validation after the same tokens


def test_accumulated_step_is_the_doubled_micro_batch_step():
    """A planted truth: K micro-batches of b, accumulated, are one step of K·b (the same samples,
    the mean of equal-size means is the mean), so the trial's losses are a micro-batch-4 run's to
    rounding: the trial really consumed K micro-batches per optimizer step."""
    (k,) = by_name(["grad_accum_speed"])
    accum = k.apply(TINY, "cpu")
    wide = dataclasses.replace(TINY, micro_batch=ACCUM_K * TINY.micro_batch, steps=accum.steps)
    a, w = train(accum), train(wide)
    assert len(a.steps) == len(w.steps) == 3
    assert [s.loss for s in a.steps] == pytest.approx([s.loss for s in w.steps], rel=1e-5)
    assert a.summary.tokens_per_step == w.summary.tokens_per_step == ACCUM_K * TINY.tokens_per_step
