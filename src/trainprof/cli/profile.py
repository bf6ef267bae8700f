"""`trainprof profile [options] -- COMMAND...`: measure your own training command, unchanged."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainprof.controls import visible


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.jobs.profile_config import ProfileJob

    p = sub.add_parser(
        "profile", help="run your own training command with trainprof inside: step split, MFU, a profile, findings",
        usage="trainprof profile [options] -- COMMAND ...",
        description="Run COMMAND (python train.py ..., python -m module ..., a script, or torchrun ...) unchanged, "
        "with trainprof loaded into it: one step = one optimizer.step(); after --warmup steps, --steps are measured "
        "and --profile-steps are traced with torch.profiler; the run folder is written as soon as they are done. "
        "Its output and exit code are the program's; trainprof prints to stderr.")
    p.set_defaults(func=profile)
    add_flags(p, ProfileJob)  # ProfileOptions, the peaks, the ranks, the output, COMMAND (jobs/profile_config.py)


def profile(args: argparse.Namespace) -> int:
    from trainprof.report.console import console

    from trainprof import outdir
    from trainprof.flags import build
    from trainprof.jobs.profile import execute, exit_code
    from trainprof.jobs.profile_config import ProfileJob
    from trainprof.report.files import auto_report

    job = build(ProfileJob, args)
    o = job.output
    out = outdir.out_or_fresh(o.out, force=o.force)
    con = console(stderr=True)  # stdout is the program's

    def on_window(w) -> None:  # noqa: ANN001
        con.print(visible(f"trainprof: window recorded: wrote {w.out}; the program runs on "
                          "(--stop-after stops it there)"), markup=False, soft_wrap=True)

    res = execute(job, Path(out), on_window=on_window,
                  write_report=lambda stage, shown: auto_report(stage, enabled=o.report, shown_as=shown))
    _print_result(con, res, job.table.rows)
    return exit_code(res.returncode)


def _print_result(con, res, rows: int) -> None:  # noqa: ANN001
    """The steps and summary, the profile table, the analysed trace and the findings (stderr)."""
    from trainprof.controls import one_line

    w = res.written
    if w is None:
        con.print(f"trainprof: {one_line(res.message or 'nothing was measured')}", markup=False, soft_wrap=True)
        return
    from trainprof.report.findings_terminal import print_findings
    from trainprof.report.profile_terminal import profile_table
    from trainprof.report.terminal import print_run

    rec, analysis = w.record, w.analysis
    print_run(rec, con, max_rows=rows)
    con.print(profile_table(rec))
    if analysis is not None:  # per rank: top ops, roofline, critical path, findings; then the job
        from trainprof.report.analysis_terminal import print_analysis
        from trainprof.report.rank_detail import DETAIL_RANKS

        con.print(f"\n[bold]Profiled steps[/] ({w.traces}, analysed)")
        print_analysis(analysis, con, DETAIL_RANKS,
                       f"`trainprof analyze {w.out / w.traces} --all-ranks` prints every rank's tables")
    else:
        print_findings(rec.findings, con, w.bottleneck)
    wrote = [w.out / "run.json"] + ([w.out / w.traces, w.out / "analysis.json"] if w.traces else [])
    con.print(visible("wrote " + ", ".join(map(str, wrote))), markup=False, soft_wrap=True)  # a path is shown, never acted on
    if w.report_note:
        con.print(visible(w.report_note), markup=False, soft_wrap=True)
    if res.message:
        con.print(f"trainprof: note: {one_line(res.message)}", markup=False, soft_wrap=True)
