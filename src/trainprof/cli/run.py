"""`trainprof run`: train the reference workload and measure every step."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from trainprof.controls import visible
from trainprof.errors import UsageError

# TrainConfig fields shown under "distributed" and "output" in --help; the rest are "workload"
DISTRIBUTED_FIELDS = ("strategy", "bind_numa")
OUTPUT_FIELDS = ("checkpoint_every",)


def add_parser(sub: argparse._SubParsersAction) -> None:
    from dataclasses import fields

    from trainprof.flags import add_flags
    from trainprof.hardware.peaks import PeakOverrides
    from trainprof.workload.config import TrainConfig

    p = sub.add_parser("run", help="train the reference GPT workload and measure it",
                       description="Train the reference GPT workload (default: tiny preset on the "
                       "best device) and report step-time split, tokens/s, TFLOPS, MFU and HFU.")
    p.set_defaults(func=run)
    # every TrainConfig field is a flag (trainprof/flags.py), grouped for --help
    add_flags(p.add_argument_group("workload"), TrainConfig, only=[
        f.name for f in fields(TrainConfig) if f.name not in DISTRIBUTED_FIELDS + OUTPUT_FIELDS])
    add_flags(p.add_argument_group("peaks"), PeakOverrides)
    d = p.add_argument_group("distributed (torch.distributed, launched with torchrun)")
    add_flags(d, RunFlags, only=("nproc",))
    add_flags(d, TrainConfig, only=DISTRIBUTED_FIELDS)
    o = p.add_argument_group("output")
    add_flags(o, RunFlags, only=("out", "json", "rows"), switches=True)
    add_flags(o, TrainConfig, only=OUTPUT_FIELDS)
    add_flags(o, RunFlags, only=("force", "resume", "resume_anyway", "profile", "profile_steps", "with_stack"),
              switches=True)
    # an optional value (--memory-snapshot alone means 2 steps): beyond what a field type says
    o.add_argument("--memory-snapshot", nargs="?", type=int, const=2, default=0, metavar="N",
                   help="CUDA: after the measured steps, record allocation history over N more steps "
                   "(default 2): DIR/memory_snapshot.pickle for pytorch.org/memory_viz, and peak memory by "
                   "category and fragmentation in run.json")
    add_flags(o, RunFlags, only=("nsys_capture", "no_report", "system_interval", "stop_at"), switches=True,
              metavars={"system_interval": "S", "stop_at": "EPOCH_S"})


@dataclass(frozen=True)
class RunFlags:
    """`trainprof run`'s flags beyond the workload (TrainConfig) and the peaks (PeakOverrides)."""

    nproc: int = 1
    """ranks on this machine: runs torchrun --standalone --nproc-per-node N -m trainprof run ..."""
    out: str | None = None
    """output folder (default runs/<timestamp>); must not exist or be empty"""
    json: bool = False
    """print run.json to stdout instead of tables"""
    rows: int = 16
    """steps shown in the table"""
    force: bool = False
    """replace an existing non-empty --out (a plain run: once the new one is complete; with --checkpoint-every:
    at the start)"""
    resume: bool = False
    """continue the run in --out from its last checkpoint; refused if the configuration differs from the
    checkpoint's"""
    resume_anyway: bool = False
    """with --resume: continue even though seed, batch, lr, dtype, ... differ from the checkpoint's"""
    profile: bool = False
    """after the measured steps, record a torch.profiler trace of a few more (DIR/trace.json.gz; not in the
    summary)"""
    profile_steps: int = 2
    """steps recorded with --profile"""
    with_stack: bool = False
    """record Python call sites in the trace"""
    nsys_capture: bool = False
    """run the --profile-steps extra steps inside cudaProfilerStart/Stop for Nsight Systems instead of
    torch.profiler (CUDA only; see `trainprof nsys-command`)"""
    no_report: bool = False
    """do not write report.html and report.md"""
    system_interval: float = 0.5
    """sample CPU/GPU utilisation, memory, IO and power every S seconds in a background thread (run.json
    "system"; 0 turns it off)"""
    stop_at: float | None = None
    """end the measured steps early, at a step boundary, so that the run (profile and validation included)
    ends by this time in seconds since the epoch; `trainprof study` and `tune` pass their deadline"""


def run(args: argparse.Namespace) -> int:
    from trainprof.collect.profiler import ProfileConfig
    from trainprof.flags import from_args
    from trainprof.hardware.peaks import PeakOverrides
    from trainprof.jobs.run import run_command
    from trainprof.report.files import auto_report
    from trainprof.workload.config import TrainConfig

    _check_args(args)
    peaks = from_args(PeakOverrides, args).validate()
    cfg = from_args(TrainConfig, args).resolved()
    if args.nsys_capture:
        profile = ProfileConfig(active=args.profile_steps, tool="nsys")
    else:
        profile = ProfileConfig(active=args.profile_steps, with_stack=args.with_stack) if args.profile else None
    res = run_command(cfg, out=args.out, peaks=peaks, nproc=args.nproc, argv=args.argv, force=args.force,
                      resume=args.resume, resume_anyway=args.resume_anyway,
                      system_interval_s=args.system_interval or None, stop_at=args.stop_at, profile=profile,
                      memory_snapshot_steps=args.memory_snapshot, progress=lambda: _progress_bar(cfg),
                      write_report=lambda stage, shown: auto_report(stage, enabled=not args.no_report,
                                                                    shown_as=shown))
    if isinstance(res, int):  # the torchrun launcher's exit code, or a rank other than 0 (rank 0 reports)
        return res
    _print_result(args, res)
    return 0


def _check_args(args: argparse.Namespace) -> None:
    """Flag values checked before anything starts (one UsageError line each)."""
    if args.system_interval < 0:
        raise UsageError(f"--system-interval must be ≥ 0 (0 turns sampling off), got {args.system_interval}")
    if args.rows < 1:
        raise UsageError(f"--rows must be ≥ 1, got {args.rows}")
    if args.nproc < 1:
        raise UsageError(f"--nproc must be ≥ 1, got {args.nproc}")
    if not args.resume and args.resume_anyway:
        raise UsageError("--resume-anyway goes with --resume")
    if args.profile_steps < 1:
        raise UsageError(f"--profile-steps must be ≥ 1, got {args.profile_steps}")
    if args.memory_snapshot < 0:
        raise UsageError(f"--memory-snapshot N must be ≥ 1 (0: off), got {args.memory_snapshot}")
    if args.nsys_capture and args.profile:
        raise UsageError("--nsys-capture replaces --profile (torch.profiler and Nsight Systems both "
                         "need CUPTI): pass one of them")


def _progress_bar(cfg):  # noqa: ANN001, ANN202
    """(on_step, stop) for a transient bar on stderr, started at the first step, so a setup
    error prints one clean line, no bar debris; off a terminal, progress lines instead
    (report/progress.py: a line at the start and end of training, a heartbeat every 30 s)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from trainprof.report.progress import Lines, duration, live_terminal

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
                lines.line(f"training ended: {len(seen)} steps run ({duration(sum(r.step_time_s for r in seen))} "
                           "of step time)")
            lines.close()

        return on_step_line, stop_lines

    progress = Progress(
        TextColumn("[bold]train[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"), TimeRemainingColumn(), console=Console(stderr=True), transient=True,
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
    """`step 12/80, loss 3.412, 590 ms/step`: the heartbeat of a run off a terminal."""
    r = seen[-1]
    loss = f", loss {r.loss:.3f}" if r.loss is not None else ""
    return f"training: step {len(seen)}/{total}{loss}, {r.step_time_s * 1e3:,.0f} ms/step"


def _print_result(args: argparse.Namespace, res) -> None:  # noqa: ANN001
    """run.json (--json), or the run's tables, the profiled steps and the findings."""
    from rich.console import Console

    from trainprof import jsontext
    from trainprof.report.terminal import print_run

    rec, analysis, report_note, out = res.record, res.analysis, res.report_note, res.out
    if args.json:
        print(jsontext.dumps(rec.to_dict()))
        return
    con = Console()
    print_run(rec, con, max_rows=args.rows)
    if analysis is not None:
        from trainprof.report.analysis_terminal import print_analysis

        con.print("\n[bold]Profiled steps[/] (trace.json.gz, analysed)")
        print_analysis(analysis, con)  # its roofline table is the top-5 operators (the seed experiment)
    from trainprof.report.findings_terminal import print_findings

    print_findings(rec.findings, con, res.bottleneck)
    profiled = f", {res.traces} and {out / 'analysis.json'}" if res.traces is not None else ""
    con.print(visible(f"wrote {out / 'run.json'}" + profiled), markup=False)  # a path is shown, never acted on
    if report_note:
        con.print(report_note, markup=False, soft_wrap=True)
