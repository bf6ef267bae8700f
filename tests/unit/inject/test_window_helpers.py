"""The agent's small mechanisms, each against a planted case: Ctrl-C deferred through the
agent's own work (inject/interrupts.py), the FLOP check between two counted steps
(window.flop_block), the CPU peak measured elsewhere failing cleanly (backends/cpu_elsewhere.py),
and the analysis beside a running program at idle priority (lowpriority.py)."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from trainprof import lowpriority
from trainprof.backends import cpu_elsewhere
from trainprof.inject import interrupts
from trainprof.inject.window import flop_block


def test_ctrl_c_during_the_agents_work_is_raised_after_it():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.deferred():
            os.kill(os.getpid(), signal.SIGINT)  # delivered now, to Python's handler at once
            done.append("the agent's work finished")  # a KeyboardInterrupt here would leave it half done
    assert done == ["the agent's work finished"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the program's handler is back


def _count(step: int, flops: int, excluded: int = 0) -> dict:
    return {"step": step, "flops": flops, "seconds": 0.1,
            "parts": {"forward": flops // 3, "backward": flops - flops // 3, "recompute": 0, "excluded": excluded}}


def test_two_counted_steps_that_differ_are_averaged_and_said():
    warnings: list[str] = []
    block = flop_block([_count(1, 3000), _count(12, 3300)], {}, warnings)
    assert block["model_flops_per_step"] == 3150 and block["counts_per_step"] == [3000, 3300]
    assert block["counted_steps"] == [1, 12] and len(warnings) == 1 and "differ by 9.1%" in warnings[0]
    same: list[str] = []
    assert flop_block([_count(1, 3000), _count(12, 3010)], {}, same)["model_flops_per_step"] == 3005 and not same


def test_a_peak_check_that_fails_elsewhere_is_a_reason_not_a_measurement_here(monkeypatch):
    monkeypatch.setattr(cpu_elsewhere.sys, "executable", "/bin/false")
    why = cpu_elsewhere.prefetch(("fp32",), False, 1)
    assert why is not None and why.startswith("exit code 1")


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_the_analysis_beside_a_running_program_runs_at_idle_priority():
    before = os.sched_getscheduler(0)
    with lowpriority.idle_cpu() as how:
        assert how == "SCHED_IDLE" and os.sched_getscheduler(0) == os.SCHED_IDLE
    assert os.sched_getscheduler(0) == before
    assert sys.platform.startswith("linux")
