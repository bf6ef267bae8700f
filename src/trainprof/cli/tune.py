"""`trainprof tune`: run the optimisation ladder on the reference workload (jobs/tune.py does the work)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from trainprof.controls import visible
from trainprof.errors import UsageError


@dataclass(frozen=True)
class TuneFlags:
    """`trainprof tune`'s own flags (the baseline's come from TrainConfig); jobs/tune.TuneJob
    takes the same defaults (tests/unit/test_flags.py checks)."""

    knobs: str | None = None
    """comma-separated subset of the catalogue, in order (default: the speed ladder)"""
    min_gain: float = 0.03
    """keep a knob only if ≥ this much faster"""
    verify_trials: int = 3
    """best-vs-baseline pairs at the end"""
    budget_minutes: float = 15.0
    """wall time for the whole tune (verify pairs included): a trial starts only when it fits, and one
    running at the deadline ends at a step boundary"""
    out: str | None = None
    """output folder (default runs/tune-<timestamp>)"""
    resume: bool = False
    """continue the tune in --out from its journal"""
    force: bool = False
    """replace an existing non-empty --out (at the start)"""
    json: bool = False
    """print tune.json to stdout"""
    no_report: bool = False
    """do not write report.html and report.md"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.tune.reference import PINNED
    from trainprof.workload.config import TrainConfig

    p = sub.add_parser("tune", help="try the known optimisations one by one; keep what is faster and still learns",
                       description="Measure a baseline, climb the optimisation ladder one knob at a time (keeping "
                       "each that is measurably faster and passes the accuracy guard), then verify the best "
                       "combination against the baseline.")
    # the baseline's TrainConfig fields (tune/reference.PINNED); the knobs change the others
    add_flags(p, TrainConfig, only=PINNED, defaults={"dtype": "fp32", "steps": 10, "eval_batches": 4},
              helps={"dtype": "the baseline's dtype (mixed precision is a knob)", "steps": "steps per trial",
                     "warmup_steps": "warm-up steps per trial, excluded from its timing",
                     "eval_batches": "validation batches per trial"})
    add_flags(p, TuneFlags, switches=True)
    p.set_defaults(func=tune)


def tune(args: argparse.Namespace) -> int:
    from rich.console import Console

    from trainprof import jsontext
    from trainprof.flags import from_args
    from trainprof.jobs.tune import TuneJob, execute, speed_ladder
    from trainprof.report.tune_terminal import print_ladder
    from trainprof.tune.catalogue import by_name
    from trainprof.tune.reference import PINNED
    from trainprof.workload.config import TrainConfig

    if args.budget_minutes <= 0 or args.steps < 2 or args.verify_trials < 0 or args.min_gain < 0:
        raise UsageError("tune: --budget-minutes > 0, --steps ≥ 2, --verify-trials ≥ 0, --min-gain ≥ 0")
    if args.warmup_steps >= args.steps:
        raise UsageError(f"--warmup-steps {args.warmup_steps} must be below --steps {args.steps}")
    knobs = by_name(args.knobs.split(",")) if args.knobs else speed_ladder()
    job = TuneJob(base=from_args(TrainConfig, args, only=PINNED).resolved(),
                  out=Path(args.out) if args.out else None, knobs=knobs, min_gain=args.min_gain,
                  verify_trials=args.verify_trials, budget_s=60 * args.budget_minutes, resume=args.resume,
                  force=args.force, report=not args.no_report)

    total = 2 + len(knobs) + 2 * args.verify_trials
    on_trial, on_begin, stop = _progress(total)
    try:
        res = execute(job, on_trial=on_trial, on_begin=on_begin)
    finally:
        stop()
    out, doc = res.out, res.doc
    if args.json:
        print(jsontext.dumps(doc))
    else:
        con = Console()
        print_ladder(doc, con)
        con.print(visible(f"wrote {out / 'tune.json'}, {out / 'journal.jsonl'}" + (f" and {res.chart}" if res.chart else "")),
                  markup=False)  # a path is shown, never acted on
        if res.report_note:
            con.print(res.report_note, markup=False, soft_wrap=True)
    return 0


def _progress(total: int):  # noqa: ANN202
    """(on_trial, on_begin, stop): a transient bar on a terminal; off one, a line per trial
    and a heartbeat every 30 s naming the trial that runs (report/progress.py)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from trainprof.report.progress import Lines, duration, live_terminal

    if not live_terminal():
        lines, seen = Lines("tune"), []

        def begin(knob: str) -> None:
            lines.status(f"trial {len(seen) + 1} of at most {total} running: {knob}")

        def finished(entry: dict) -> None:
            seen.append(entry)
            what = ("stopped at the deadline" if entry.get("cut_short") else
                    f"{entry['tokens_per_s']:,.0f} tokens/s" if entry.get("ok") else f"failed: {entry.get('reason')}")
            took = f" in {duration(entry['wall_s'])}" if entry.get("wall_s") else ""
            lines.line(f"trial {len(seen)} of at most {total} ({entry['knob']}){took}: {what}")
            lines.status("")

        return finished, begin, lines.close

    progress = Progress(TextColumn("[bold]tune[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=Console(stderr=True), transient=True)
    task = progress.add_task("baseline", total=total)

    def on_trial(entry: dict) -> None:
        if not progress.live.is_started:
            progress.start()
        progress.update(task, advance=1, description=entry["knob"])

    def stop() -> None:
        if progress.live.is_started:
            progress.stop()

    return on_trial, None, stop
