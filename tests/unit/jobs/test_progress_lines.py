"""Progress when stderr is not a terminal (a batch job's log, a pipe): a line per stage start
and end and a heartbeat, for run, tune and study (report/progress.py). Under pytest stderr
is captured, so not a terminal: the paths below are the ones a log file gets."""

from __future__ import annotations

import functools
import io
import re
import time
from types import SimpleNamespace

from study_fakes import Clock, Machine

from trainprof.cli import main
from trainprof.report.progress import Lines, live_terminal

STAMP = r"\d\d:\d\d:\d\d trainprof "


def test_lines_and_their_heartbeat():
    out = io.StringIO()
    lines = Lines("tune", stream=out, heartbeat_s=0.05)
    lines.line("trial 1 of at most 4 (baseline) in 3 s: 1,234 tokens/s")
    lines.status("trial 2 of at most 4 running: compile")
    time.sleep(0.3)
    lines.close()
    text = out.getvalue().splitlines()
    assert re.fullmatch(STAMP + r"tune: trial 1 of at most 4 \(baseline\) in 3 s: 1,234 tokens/s", text[0])
    beats = [x for x in text[1:] if re.fullmatch(STAMP + r"tune: … trial 2 of at most 4 running: compile \(for 0 s\)",
                                                  x)]
    assert len(beats) >= 2 and len(beats) == len(text) - 1


def test_time_left_is_the_rest_at_the_median_never_past_the_deadline():
    from trainprof.report.progress import time_left

    # 4 more items at the median of 10, 30, 20 s (a slow one does not inflate it): 80 s
    assert time_left([10.0, 30.0, 20.0], 4) == "~80 s left"
    assert time_left([10.0, 30.0, 20.0], 4, cap_s=50.0) == "~50 s left"  # the deadline comes first
    assert time_left([60.0], 5, of="steps") == "~5.0 min of steps left"
    assert time_left([], 4) == "" and time_left([10.0], 0) == ""  # nothing done yet, or nothing left


def test_run_and_tune_lines_say_the_time_left(capsys):
    from trainprof.cli.run import _step_status
    from trainprof.cli.tune import _progress

    # 3 of 9 steps of 0.5 s done: 6 more at 0.5 s = 3 s of steps left
    seen = [SimpleNamespace(loss=5.0, step_time_s=0.5)] * 3
    assert _step_status(seen, 9) == "training: step 3/9, loss 5.000, 500 ms/step, ~3 s of steps left"
    finished, begin, stop = _progress(5)
    finished({"knob": "baseline", "ok": True, "tokens_per_s": 1000.0, "wall_s": 40.0})
    finished({"knob": "baseline_seed2", "ok": True, "tokens_per_s": 1000.0, "wall_s": 20.0})
    stop()
    err = capsys.readouterr().err.splitlines()
    # at most 3 more trials at the median of 40 and 20 s: 90 s = 1.5 min
    assert re.fullmatch(STAMP + r"tune: trial 2 of at most 5 \(baseline_seed2\) in 20 s: 1,000 tokens/s; "
                                r"at most ~1.5 min left", err[-1])


def test_run_prints_its_training_start_and_end(capsys):
    from trainprof.cli.run import _progress_bar

    assert not live_terminal()
    on_step, stop = _progress_bar(SimpleNamespace(steps=3, preset="tiny", device="cpu"))
    for i in range(3):
        on_step(SimpleNamespace(loss=5.0 - i, step_time_s=0.5))
    stop()
    err = capsys.readouterr().err.splitlines()
    assert re.fullmatch(STAMP + "run: training started: 3 steps of tiny on cpu", err[0])
    assert re.fullmatch(STAMP + r"run: training ended: 3 steps run \(2 s of step time\)", err[-1])
    # --device auto (the default) is said as the device it became
    on_step, stop = _progress_bar(SimpleNamespace(steps=3, preset="tiny", device="auto"))
    on_step(SimpleNamespace(loss=5.0, step_time_s=0.5))
    stop()
    assert re.fullmatch(STAMP + "run: training started: 3 steps of tiny on (cpu|cuda)", capsys.readouterr().err.splitlines()[0])


def test_study_prints_each_stage_trial_and_a_heartbeat(tmp_path, monkeypatch, capsys):
    """The study CLI end to end with fake runs (study_fakes.Machine): its lines on stderr."""
    import trainprof.jobs.study as study

    m = Machine(Clock(), step_s=1.0)

    def slow_launch(*a):  # 0.25 s of real time: the 0.05 s heartbeat beats during it
        time.sleep(0.25)
        return m.launch(*a)

    monkeypatch.setattr(study, "start", functools.partial(study.start, clock=m.clock, launch=slow_launch,
                                                          trial_runner=m.trial, heartbeat_s=0.05))
    assert main(["study", "--knobs", "gc_disable", "--verify-trials", "0", "--device", "cpu", "--budget-minutes", "6",
                 "--out", str(tmp_path / "s")]) == 0
    err = capsys.readouterr().err
    # the time left (issue #37 item 5.7): the budget's while the tune is ahead (it takes what is
    # left: 6 min at the start), then the trials' and the later stages' estimates: the optimised
    # run's 42 s (as the baseline's) + diff 10 s + report 10 s = 62 s
    for line in [r"\[1/5\] baseline started \(expected ~1.5 min; 0 s of the 6.0 min budget spent, ~6.0 min left\)",
                 r"… baseline running for 0 s \(0 s of the 6.0 min budget spent, ~6.0 min left\)",
                 r"baseline done in \d+ s \(\d+ s of the 6.0 min budget spent\)",
                 r"tune: trial 1 of at most 3 \(baseline\) done in \d+ s; at most ~\d+ s left for the tune",
                 r"tune: trial 3 of at most 3 \(gc_disable\) done in \d+ s",
                 r"\[3/5\] optimised started \(expected ~42 s; 1.6 min of the 6.0 min budget spent, ~62 s left\)",
                 r"\[5/5\] report started .*, ~10 s left\)", r"report done in 0 s .*"]:
        assert re.search("^" + STAMP + "study: " + line + "$", err, re.M), line
