"""`run --stop-at`: the measured steps end at a step boundary so that the run, its profile and
validation included, ends by the deadline (workload/trainer.StopAt)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from trainprof.collect.profiler import ProfileConfig
from trainprof.workload.config import TrainConfig
from trainprof.workload.trainer import StopAt, tail_steps, train


def _steps(*times):
    return [SimpleNamespace(step_time_s=t) for t in times]


def test_the_rule_by_hand():
    # after the steps: a 1-step profile (3 profiler steps × 1.3) and 8 validation batches × 0.35
    assert tail_steps(TrainConfig(eval_batches=8), ProfileConfig(active=1), 0) == pytest.approx(6.7)
    stop = StopAt(at=100.0, tail=2.0)
    assert not stop.now(_steps(10, 10), warmup=2, clock=lambda: 99.0)  # never before warm-up + one step
    # 3 steps of 10 s: the next one and the tail take 10·(1 + 2) = 30 s
    assert not stop.now(_steps(10, 10, 10), warmup=2, clock=lambda: 70.0)  # 70 + 30 = 100: it fits
    assert stop.now(_steps(10, 10, 10), warmup=2, clock=lambda: 71.0)  # 101 > 100
    # the estimate is the median of the last five steps: one slow step (50 s) does not stop it
    assert not stop.now(_steps(10, 10, 10, 10, 50), warmup=2, clock=lambda: 60.0)


def test_a_run_past_its_stop_time_ends_after_warm_up_and_one_step():
    cfg = TrainConfig(preset="tiny", device="cpu", steps=6, warmup_steps=1, micro_batch=1, seq_len=8,
                      eval_batches=1, dtype="fp32").resolved()
    rec = train(cfg, stop_at=time.time())  # already past: the least a summary needs
    assert len(rec.steps) == 2 and rec.summary.measured_steps == 1 and rec.summary.val_loss is not None
    assert rec.warnings[-1].startswith("stopped after 2 of 6 steps")
