"""`trainprof profile [options] -- COMMAND...`: measure your own training command, unchanged."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from trainprof.controls import visible
from trainprof.errors import UsageError


@dataclass(frozen=True)
class ProfileFlags:
    """`trainprof profile`'s flags beyond what the agent measures (inject/options.py)."""

    nproc: int = 1
    """ranks on this machine: runs the command under torchrun --standalone --nproc-per-node N"""
    out: str | None = None
    """output folder (default runs/<timestamp>); must not exist or be empty"""
    force: bool = False
    """replace an existing non-empty --out once the new one is complete"""
    rows: int = 16
    """steps shown in the table"""
    no_report: bool = False
    """do not write report.html and report.md"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.hardware.peaks import PeakOverrides
    from trainprof.inject.options import ProfileOptions

    p = sub.add_parser(
        "profile", help="run your own training command with trainprof inside: step split, MFU, a profile, findings",
        usage="trainprof profile [options] -- COMMAND ...",
        description="Run COMMAND (python train.py ..., python -m module ..., a script, or torchrun ...) unchanged, "
        "with trainprof loaded into it: one step = one optimizer.step(); after --warmup steps, --steps are measured "
        "and --profile-steps are traced with torch.profiler; the run folder is written as soon as they are done. "
        "Its output and exit code are the program's; trainprof prints to stderr.")
    p.set_defaults(func=profile)
    add_flags(p.add_argument_group("measuring"), ProfileOptions, switches=True,
              metavars={"step_marker": "MODULE:QUALNAME", "system_interval": "S"})
    add_flags(p.add_argument_group("peaks"), PeakOverrides)
    add_flags(p.add_argument_group("ranks and output"), ProfileFlags, switches=True)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND",
                   help="the training command, after --")


def profile(args: argparse.Namespace) -> int:
    from rich.console import Console

    from trainprof import outdir
    from trainprof.flags import from_args
    from trainprof.hardware.peaks import PeakOverrides
    from trainprof.inject.options import ProfileOptions
    from trainprof.jobs.profile import ProfileJob, execute, exit_code
    from trainprof.report.files import auto_report

    opts = from_args(ProfileOptions, args)
    bad = opts.check()
    if args.nproc < 1:
        bad.append(f"--nproc must be ≥ 1, got {args.nproc}")
    if args.rows < 1:
        bad.append(f"--rows must be ≥ 1, got {args.rows}")
    if bad:
        raise UsageError(bad[0])
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    peaks = from_args(PeakOverrides, args).validate()
    out = outdir.fresh_dir() if args.out is None else outdir.check_out(args.out, force=args.force)
    con = Console(stderr=True)  # stdout is the program's

    def on_window(w) -> None:  # noqa: ANN001
        con.print(visible(f"trainprof: window recorded: wrote {w.out}; the program runs on "
                          "(--stop-after stops it there)"), markup=False, soft_wrap=True)

    job = ProfileJob(command, Path(out), opts, peaks, nproc=args.nproc, force=args.force)
    res = execute(job, on_window=on_window,
                  write_report=lambda stage, shown: auto_report(stage, enabled=not args.no_report, shown_as=shown))
    _print_result(con, res, args.rows)
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
    con.print(profile_table(rec.to_dict()))
    if analysis is not None:  # per rank: top ops, roofline, critical path, findings; then the job
        from trainprof.report.analysis_terminal import print_analysis

        con.print(f"\n[bold]Profiled steps[/] ({w.traces}, analysed)")
        print_analysis(analysis, con)
    else:
        print_findings(rec.findings, con, w.bottleneck)
    wrote = [w.out / "run.json"] + ([w.out / w.traces, w.out / "analysis.json"] if w.traces else [])
    con.print(visible("wrote " + ", ".join(map(str, wrote))), markup=False, soft_wrap=True)  # a path is shown, never acted on
    if w.report_note:
        con.print(visible(w.report_note), markup=False, soft_wrap=True)
    if res.message:
        con.print(f"trainprof: note: {one_line(res.message)}", markup=False, soft_wrap=True)
