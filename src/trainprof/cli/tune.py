"""`trainprof tune`: run the optimisation ladder on the reference workload (jobs/tune.py does the work)."""

from __future__ import annotations

import argparse

from trainprof.controls import visible


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.jobs.tune_config import TuneJob

    p = sub.add_parser("tune", help="try the known optimisations one by one; keep what is faster and still learns",
                       usage="trainprof tune [options] [-- COMMAND ...]",
                       description="Measure a baseline, climb the optimisation ladder one knob at a time (keeping "
                       "each that is measurably faster and passes the accuracy guard), then verify the best "
                       "combination against the baseline. On the reference workload (--preset), or, with -- COMMAND, "
                       "on your own program run unchanged: each trial is a short `trainprof profile` window with the "
                       "knob applied from outside, and the kept knobs come with the code change that makes them "
                       "permanent.")
    add_flags(p, TuneJob)  # the pinned TrainConfig fields, TuneConfig, the budget, the output (jobs/tune_config.py)
    p.set_defaults(func=tune)


def tune(args: argparse.Namespace) -> int:
    from trainprof.report.console import console

    from trainprof import jsontext
    from trainprof.flags import build
    from trainprof.jobs.tune import execute
    from trainprof.jobs.tune_config import TuneJob
    from trainprof.report.tune_terminal import print_ladder

    job = build(TuneJob, args)
    total = 2 + job.rungs() + 2 * job.tune.verify_trials
    on_trial, on_begin, stop = _progress(total, 60 * job.budget_minutes)
    try:
        res = execute(job, on_trial=on_trial, on_begin=on_begin)
    finally:
        stop()
    out, doc = res.out, res.doc
    if job.output.json:
        print(jsontext.dumps(doc))
    else:
        con = console()
        print_ladder(doc, con)
        con.print(visible(f"wrote {out / 'tune.json'}, {out / 'journal.jsonl'}" + (f" and {res.chart}" if res.chart else "")),
                  markup=False)  # a path is shown, never acted on
        if res.report_note:
            con.print(res.report_note, markup=False, soft_wrap=True)
    return 0


def _progress(total: int, budget_s: float | None = None):  # noqa: ANN202
    """(on_trial, on_begin, stop): a transient bar on a terminal; off one, a line per trial
    with the time left (at most: the ladder may stop early; never past the budget) and a
    heartbeat every 30 s naming the trial that runs (report/progress.py)."""
    import time

    from trainprof.report.console import console

    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    from trainprof.report.formatting import duration
    from trainprof.report.progress import Lines, live_terminal, time_left

    if not live_terminal():
        lines, seen, t0 = Lines("tune"), [], time.monotonic()

        def begin(knob: str) -> None:
            lines.status(f"trial {len(seen) + 1} of at most {total} running: {knob}")

        def finished(entry: dict) -> None:
            seen.append(entry)
            unit = ((entry.get("notes") or {}).get("facts") or {}).get("unit") or "tokens"  # a program's: samples
            what = ("stopped at the deadline" if entry.get("cut_short") else
                    f"{entry['tokens_per_s']:,.0f} {unit}/s" if entry.get("ok") else f"failed: {entry.get('reason')}")
            took = f" in {duration(entry['wall_s'], 's', 'wall')}" if entry.get("wall_s") else ""
            cap = None if budget_s is None else budget_s - (time.monotonic() - t0)
            left = time_left([e["wall_s"] for e in seen if e.get("wall_s")], total - len(seen), cap)
            lines.line(f"trial {len(seen)} of at most {total} ({entry['knob']}){took}: {what}"
                       + (f"; at most {left}" if left else ""))
            lines.status("")

        return finished, begin, lines.close

    progress = Progress(TextColumn("[bold]tune[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), TimeRemainingColumn(), console=console(stderr=True), transient=True)
    task = progress.add_task("baseline", total=total)

    def on_trial(entry: dict) -> None:
        if not progress.live.is_started:
            progress.start()
        progress.update(task, advance=1, description=entry["knob"])

    def stop() -> None:
        if progress.live.is_started:
            progress.stop()

    return on_trial, None, stop
