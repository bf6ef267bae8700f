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


def test_a_peak_check_that_fails_elsewhere_is_a_reason_not_a_measurement_here(monkeypatch, tmp_path):
    monkeypatch.setenv("TRAINPROF_CACHE_DIR", str(tmp_path))  # nothing recent to take instead
    monkeypatch.setattr(cpu_elsewhere.sys, "executable", "/bin/false")
    why = cpu_elsewhere.prefetch(("fp32",), False, 1)
    assert why is not None and why.startswith("exit code 1")


def test_a_peak_checked_elsewhere_a_minute_ago_is_taken_without_a_process(monkeypatch, tmp_path):
    """The tune's previous trial checked the peak 60 s ago: no child of our own (it would fail
    here: /bin/false), the value seeded for the Monitor, the note says whose check it was. At
    three minutes the child runs again (and fails)."""
    import datetime as dt

    from trainprof.backends import cpu, cpu_peak

    monkeypatch.setenv("TRAINPROF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cpu_elsewhere.sys, "executable", "/bin/false")
    monkeypatch.setattr(cpu, "_SEEN", {})
    key = cpu.matmul_key("fp32")

    def ago(s: float) -> str:
        return (dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=s)).replace(microsecond=0).isoformat()

    m = cpu_peak.Measurement(0.209, key, "measured", ago(3600), 0.05, 0.1, 0.22, None, True)
    cpu_peak.write_entry(key, m)
    # an hour-old measurement, never checked since: a check is due, in a child
    assert cpu_elsewhere.prefetch(("fp32",), False, 1).startswith("exit code 1")
    # another process's check passed a minute ago (what measure() records under the cache's lock)
    cpu_peak._note_checked(key, 0.21, None, lambda: ago(60))
    import torch

    rng = torch.get_rng_state()
    assert cpu_elsewhere.prefetch(("fp32",), False, 1) is None
    assert torch.equal(torch.get_rng_state(), rng)  # inside the program: a file read, no draw from its stream
    seen = cpu._SEEN[(str(cpu_peak.cache_path()), key)]
    assert (seen.value, seen.source, seen.check, seen.reference) == (0.209, "cached, checked", 0.21, 0.22)
    assert seen.note.startswith("checked 6") and seen.note.endswith("s ago by another process")
    # the bandwidth was never measured: the roofline's copy peak needs the child
    assert cpu_elsewhere.prefetch(("fp32",), True, 1).startswith("exit code 1")
    cpu_peak._note_checked(key, 0.21, None, lambda: ago(180))
    assert cpu_elsewhere.prefetch(("fp32",), False, 1).startswith("exit code 1")


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_the_analysis_beside_a_running_program_runs_at_idle_priority():
    before = os.sched_getscheduler(0)
    with lowpriority.idle_cpu() as how:
        assert how == "SCHED_IDLE" and os.sched_getscheduler(0) == os.SCHED_IDLE
    assert os.sched_getscheduler(0) == before
    assert sys.platform.startswith("linux")
