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
    for line in [r"\[1/5\] baseline started \(expected ~1.5 min; 0 s of the 6.0 min budget spent\)",
                 r"… baseline running for 0 s \(0 s of the 6.0 min budget spent\)",
                 r"baseline done in \d+ s \(\d+ s of the 6.0 min budget spent\)",
                 r"tune: trial 1 of at most 3 \(baseline\) done in \d+ s",
                 r"tune: trial 3 of at most 3 \(gc_disable\) done in \d+ s",
                 r"\[5/5\] report started .*", r"report done in 0 s .*"]:
        assert re.search("^" + STAMP + "study: " + line + "$", err, re.M), line
