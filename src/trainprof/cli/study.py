"""`trainprof study`: the profiling assignment end to end (jobs/study.py does the work)."""

from __future__ import annotations

import argparse
import datetime as _dt
from pathlib import Path
from typing import TYPE_CHECKING

from trainprof.controls import visible
from trainprof.report.formatting import duration

if TYPE_CHECKING:
    from trainprof.recordtypes.study import Study as StudyRecord


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.jobs.study_config import StudyJob

    p = sub.add_parser("study", help="the whole assignment: baseline, profile, top-5 on the roofline, tune, "
                       "optimised profile, diff, report",
                       usage="trainprof study [options] [-- COMMAND ...]",
                       description="Train the reference workload with validation loss, profile one iteration, "
                       "place the top-5 operators on the roofline (with the Nsight Compute command for their "
                       "kernels), climb the tune ladder with the accuracy guard inside the budget, profile the "
                       "best configuration, compare the two profiles and write report.md and report.html. "
                       "With -- COMMAND, the same on your own program run unchanged: `trainprof profile` of it, "
                       "`trainprof tune -- COMMAND`'s ladder, a profile with the kept knobs applied, the diff's "
                       "verdict, and the code changes that make the kept knobs permanent. Resumable with --resume.")
    add_flags(p, StudyJob)  # StudyConfig (train, tune, its own fields) and the output (jobs/study_config.py)
    p.set_defaults(func=study)


def study(args: argparse.Namespace) -> int:
    from trainprof.report.console import console

    from trainprof import owned
    from trainprof.errors import InputError
    from trainprof.flags import build
    from trainprof.jobs.study_program import start  # the reference workload's, or a program's (-- COMMAND)
    from trainprof.jobs.study_config import StudyJob

    job = build(StudyJob, args)  # every value checked here: a bad one writes nothing
    cfg, o = job.study, job.output
    if cfg.train.data is not None and not Path(cfg.train.data).exists():
        raise InputError(f"--data {cfg.train.data}: no such file or folder")
    out = Path(o.out) if o.out else Path("runs") / _dt.datetime.now().strftime("study-%Y%m%d-%H%M%S")
    given = _given(args.argv) if o.resume else set()
    progress = _Progress()
    try:
        with owned.tracking(out):  # each file the study writes joins the folder's manifest (--force removes those)
            # on --resume, --budget-minutes given is a new budget from now; not given, the journal's
            s = start(out, cfg, resume=o.resume, force=o.force, given=given if o.resume else None,
                      budget_minutes=cfg.budget_minutes if "budget_minutes" in given else None,
                      resume_anyway=o.resume_anyway, on_event=progress.on_event)
            if s.budget.note or s.changes:
                progress.say("; ".join([*([s.budget.note] if s.budget.note else []),
                                        *(f"continuing with {c} (--resume-anyway)" for c in s.changes)]))
            try:
                doc = s.run_all()
            finally:
                progress.stop()
    except KeyboardInterrupt:
        raise _interrupted(out) from None
    con = console()
    _print_result(doc, out, con)
    return 0


def _interrupted(out: Path) -> KeyboardInterrupt:
    """Ctrl-C: the journal keeps every stage that finished (the one running is recorded as
    failed), so the line says how to go on; before the journal exists, nothing to resume."""
    from trainprof.controls import shell_join
    from trainprof.errors import Interrupted

    if not (out / "journal.jsonl").is_file():
        return KeyboardInterrupt()
    return Interrupted(f"the journal keeps the finished stages: continue with `"
                       f"{shell_join(['trainprof', 'study', '--resume', '--out', str(out)])}` "
                       "(add --budget-minutes M for M more minutes)")


def _given(argv: list[str]) -> set[str]:
    """The flags given on the command line, by name (what a resume compares with the journal):
    the study parser again, every default suppressed (no abbreviation reaches here: cli._Parser
    refuses them)."""
    from trainprof.cli import _Parser

    p = _Parser(prog="trainprof")
    sub = p.add_subparsers(dest="_subcommand", parser_class=_Parser)  # `command` is the program's (-- COMMAND)
    add_parser(sub)
    sp = sub.choices["study"]
    for a in sp._actions:  # argparse has no public list of a parser's actions
        a.default = argparse.SUPPRESS
    ns = p.parse_args(argv)
    return {k for k in vars(ns) if k not in ("_subcommand", "func")} - ({"command"} if not ns.__dict__.get("command")
                                                                           else set())


class _Progress:
    """The study's progress on stderr: rich's status line on a terminal, plain lines in a log
    (report/progress.py): each stage's start and end, each trial, a heartbeat every 30 s."""

    def __init__(self) -> None:
        from trainprof.report.console import console

        from trainprof.report.progress import Lines, live_terminal

        self.lines = None if live_terminal() else Lines("study", heartbeat_s=0)  # the study beats itself
        self.status = None if self.lines else console(stderr=True).status("study: starting")
        self.live = False
        self.stage = ""

    def say(self, text: str) -> None:
        if self.lines:
            self.lines.line(text)
        else:
            self.status.console.print(visible(text), markup=False, soft_wrap=True)

    def _show(self, text: str) -> None:
        if self.status is not None:
            self.status.update(text)
            if not self.live:  # started with the first stage: a bad flag prints one clean line
                self.status.start()
                self.live = True

    def on_event(self, kind: str, info: dict) -> None:
        from trainprof.report.progress import time_left

        spent = (f"{duration(info['spent_s'], 's', 'wall')} of the {duration(info['budget_s'], 's', 'wall')} budget spent"
                 if "spent_s" in info else "")
        if info.get("left_s") is not None:  # the study's estimate: this stage's rest and the later stages'
            spent += f", ~{duration(info['left_s'], 's', 'wall')} left"
        if kind == "start":
            self.stage = info["stage"]
            head = f"[{info['index']}/{info['of']}] {info['stage']}"
            if self.lines:
                self.lines.line(f"{head} started (expected ~{duration(info['expected_s'], 's', 'wall')}; {spent})")
            self._show(f"study {head} — expected ~{duration(info['expected_s'], 's', 'wall')} ({spent})")
        elif kind == "heartbeat":
            detail = f", {info['detail']}" if info.get("detail") else ""
            running = duration(info["running_s"], "s", "wall")
            if self.lines:
                self.lines.line(f"… {info['stage']} running for {running}{detail} ({spent})")
            self._show(f"study [bold]{info['stage']}[/] — {running}{detail} ({spent})")
        elif kind == "trial":
            what = "stopped at the deadline" if info.get("cut_short") else "done" if info.get("ok") else "failed"
            left = time_left(info.get("walls_s") or [], info["of"] - info["n"], info.get("deadline_left_s"))
            text = f"tune: trial {info['n']} of at most {info['of']} ({info['knob']}) {what}" + (
                f" in {duration(info['wall_s'], 's', 'wall')}" if info.get("wall_s") is not None else "") + (
                f"; at most {left} for the tune" if left else "")
            if self.lines:
                self.lines.line(text)
            self._show(f"study [bold]tune[/] — {text}")
        elif kind in ("done", "skip", "skipped"):
            text = {"done": lambda: f"{info['stage']} done in {duration(info['wall_s'], 's', 'wall')} ({spent})",
                    "skip": lambda: f"{info['stage']} already done ({duration(info['wall_s'], 's', 'wall')}, journal)",
                    "skipped": lambda: f"{info['stage']} skipped: {info['reason']}"}[kind]()
            if self.lines:
                self.lines.line(text)
            else:
                self.status.console.print(visible(f"  {text}"), markup=False, soft_wrap=True)

    def stop(self) -> None:
        if self.live:
            self.status.stop()
        if self.lines:
            self.lines.close()


def _print_result(doc: StudyRecord, out: Path, con) -> None:  # noqa: ANN001
    """The stages (with why one was skipped), the final speed-up and the accuracy verdict:
    the sentences report.md prints (report/study_md.py, report/study_text.py)."""
    from trainprof.report.console import escape

    from trainprof.report.figures import show
    from trainprof.report.fit import FitTable
    from trainprof.report.study_md import stage_note
    from trainprof.report.study_text import accuracy_sentence, speedup_sentence

    t = FitTable(title=f"Study {escape(visible(str(out)))} (budget {show(doc.budget_s, 'wall', 'study.budget_s')}, "
                       f"spent {show(doc.spent_s, 'wall', 'study.spent_s')})", title_justify="left")
    for c in ("stage", "status", "wall", "expected", "note"):
        t.add_column(c, justify="right" if c in ("wall", "expected") else "left")
    for i, st in enumerate(doc.stages):
        t.add_row(st.stage, st.status, show(st.wall_s, "wall", f"study.stages[{i}].wall_s"),
                  show(st.expected_s, "wall", f"study.stages[{i}].expected_s"), escape(visible(stage_note(st, doc))))
    con.print(t)
    if doc.speedup:
        unit = _unit(out)
        con.print(f"[bold]speed-up:[/] {escape(visible(speedup_sentence(doc.speedup, doc.accuracy or None, unit)))}")
    if doc.accuracy:
        con.print(f"[bold]accuracy:[/] {escape(visible(accuracy_sentence(doc.accuracy)))}")
    con.print(visible(f"wrote {out / 'report.md'} and {out / 'report.html'} (records: "
                      + ", ".join(doc.records.values()) + ")"), markup=False, soft_wrap=True)


def _unit(out: Path) -> str:
    """What the baseline's steps count (run.json's batch_unit: a program's may be samples)."""
    from trainprof.recordtypes.run import load_run

    try:
        return load_run(out / "baseline" / "run.json").batch_unit
    except Exception:  # noqa: BLE001 - the sentence's word only
        return "tokens"
