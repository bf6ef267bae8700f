"""`trainprof run`: train the reference workload and measure every step."""

from __future__ import annotations

import argparse

from trainprof.controls import visible

def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.jobs.run_config import RunJob

    p = sub.add_parser("run", help="train the reference GPT workload and measure it",
                       description="Train the reference GPT workload (default: tiny preset on the "
                       "best device) and report step-time split, tokens/s, TFLOPS, MFU and HFU.")
    p.set_defaults(func=run)
    add_flags(p, RunJob)  # every TrainConfig field, the peaks, RunOptions and the output (jobs/run_config.py)


def run(args: argparse.Namespace) -> int:
    from trainprof.flags import build
    from trainprof.jobs.run import run_command
    from trainprof.jobs.run_config import RunJob
    from trainprof.report.files import auto_report

    job = build(RunJob, args)
    res = run_command(job, argv=args.argv, progress=lambda: _progress_bar(job.train),
                      write_report=lambda stage, shown: auto_report(stage, enabled=job.output.report,
                                                                    shown_as=shown))
    if isinstance(res, int):  # the torchrun launcher's exit code, or a rank other than 0 (rank 0 reports)
        return res
    _print_result(job, res)
    return 0


def _progress_bar(cfg):  # noqa: ANN001, ANN202
    """(on_step, stop) for a transient bar on stderr, started at the first step, so a setup
    error prints one clean line, no bar debris; off a terminal, progress lines instead
    (report/progress.py: a line at the start and end of training, a heartbeat every 30 s)."""
    from trainprof.report.console import console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from trainprof.report.formatting import duration
    from trainprof.report.progress import Lines, live_terminal

    if not live_terminal():
        lines = Lines("run")
        seen: list = []

        def on_step_line(r):  # noqa: ANN001
            if not seen:  # the device as decided (`auto` is resolved by the time a step has run)
                from trainprof.backends import resolve_device

                lines.line(f"training started: {cfg.steps} steps of {cfg.preset} on {resolve_device(cfg.device)}")
                lines.status(lambda: _step_status(seen, cfg.steps))
            seen.append(r)

        def stop_lines() -> None:  # after the steps, or when training failed: said neutrally
            if seen:
                took = duration(sum(r.step_time_s for r in seen), "s", "wall")
                lines.line(f"training ended: {len(seen)} steps run ({took} of step time)")
            lines.close()

        return on_step_line, stop_lines

    progress = Progress(
        TextColumn("[bold]train[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"), TimeRemainingColumn(), console=console(stderr=True), transient=True,
    )
    task = progress.add_task(f"{cfg.preset}", total=cfg.steps, info="")

    def on_step(r):  # noqa: ANN001
        if not progress.live.is_started:
            progress.start()
        progress.update(task, advance=1,
                        info=f"loss {r.loss:.3f}  {r.step_time_s * 1e3:,.0f} ms/step" if r.loss is not None else "")

    def stop() -> None:
        if progress.live.is_started:  # stop() on a never-started bar still prints a newline
            progress.stop()

    return on_step, stop


def _step_status(seen: list, total: int) -> str:
    """`step 12/80, loss 3.412, 590 ms/step, ~40 s of steps left`: the heartbeat of a run off
    a terminal (the steps only: profiled steps and validation follow them)."""
    from trainprof.report.progress import time_left

    r = seen[-1]
    loss = f", loss {r.loss:.3f}" if r.loss is not None else ""
    left = time_left([x.step_time_s for x in seen], total - len(seen), of="steps")
    return f"training: step {len(seen)}/{total}{loss}, {r.step_time_s * 1e3:,.0f} ms/step" + (f", {left}" if left else "")


def _print_result(job, res) -> None:  # noqa: ANN001
    """run.json (--json), or the run's tables, the profiled steps and the findings."""
    from trainprof.report.console import console

    from trainprof import jsontext
    from trainprof.report.terminal import print_run

    rec, analysis, report_note, out = res.record, res.analysis, res.report_note, res.out
    if job.output.json:
        print(jsontext.dumps(rec.to_dict()))
        return
    con = console()
    print_run(rec, con, max_rows=job.table.rows)
    if analysis is not None:
        from trainprof.report.analysis_terminal import print_analysis
        from trainprof.report.rank_detail import DETAIL_RANKS

        con.print("\n[bold]Profiled steps[/] (trace.json.gz, analysed)")
        # its roofline table is the top-5 operators (the seed experiment); a large job: a few ranks in full
        print_analysis(analysis, con, DETAIL_RANKS,
                       f"`trainprof analyze {out / (res.traces or '')} --all-ranks` prints every rank's tables")
    from trainprof.report.findings_terminal import print_findings

    print_findings(rec.findings, con, res.bottleneck)
    profiled = f", {res.traces} and {out / 'analysis.json'}" if res.traces is not None else ""
    con.print(visible(f"wrote {out / 'run.json'}" + profiled), markup=False)  # a path is shown, never acted on
    if report_note:
        con.print(report_note, markup=False, soft_wrap=True)
