"""`trainprof analyze PATH...`: analyse Kineto traces (files or folders of per-rank files)."""

from __future__ import annotations

import argparse
import os
import sys

from trainprof.controls import visible
from trainprof.errors import UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.hardware.peaks import PeakOverrides

    p = sub.add_parser("analyze", help="analyse Kineto traces: GPU time breakdown, idle causes, top ops",
                       description="Analyse one or more Kineto/Chrome traces (.json, .json.gz; a folder "
                       "or glob means one trace per rank). A trace that cannot be read is named with its "
                       "error in analysis.json's `unreadable` and the others are analysed; exit code 2 "
                       "only when none can be read.")
    p.add_argument("paths", nargs="+", metavar="SOURCE",
                   help="trace file, folder, glob ('runs/job/rank*.json.gz', quoted) or fsspec URL "
                        "(file://, s3:// with s3fs, gs:// with gcsfs, ...)")
    p.add_argument("--out", help="folder for analysis.json (default: print only); must not exist or be empty")
    p.add_argument("--force", action="store_true", help="replace what trainprof wrote in an existing --out (once the "
                   "new one is complete; never other files)")
    p.add_argument("--top", type=int, default=10, help="top-K operators and kernels (default 10)")
    p.add_argument("--step", type=int, metavar="N", help="analyse only ProfilerStep#N")
    p.add_argument("--jobs", type=int, help="parallel workers for several traces, at most this many traces in "
                   "memory at once (default: cores); with --engine ray and no address: the local Ray CPUs")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local: a process pool on this machine (default); ray: one Ray task per trace "
                        "(pip install 'trainprof[cluster]'), see docs/scale.md")
    p.add_argument("--ray-address", metavar="ADDR", help="join this Ray cluster (e.g. auto, HOST:6379, "
                   "ray://HOST:10001) instead of starting a local one; --engine ray only")
    p.add_argument("--ray-start-timeout", type=float, metavar="SECONDS", default=None,
                   help="how long a local Ray instance may take to start, retried within it (default 120; "
                        "a busy machine can need more); --engine ray only")
    p.add_argument("--json", action="store_true", help="print analysis.json to stdout instead of tables")
    p.add_argument("--perfetto", metavar="OUT.json.gz", help="also write one trace of the whole job for "
                   "ui.perfetto.dev: every rank, overlaps laid on extra lanes so nothing is dropped, plus "
                   "collective waits, the critical path and the findings (docs/collectives.md)")
    p.add_argument("--no-report", action="store_true", help="with --out: do not write report.html and report.md")
    r = p.add_argument_group("roofline")
    add_flags(r, PeakOverrides, helps={
        "gpu_spec": "spec-table row to use (see `trainprof specs`) instead of the trace's device name"})
    r.add_argument("--plots", action="store_true", help="with --out: also write roofline.png/.svg (matplotlib; "
                   "report.md links them; report.html draws its own charts)")
    r.add_argument("--no-plots", action="store_true", help=argparse.SUPPRESS)  # the default since #16
    r.add_argument("--ncu", metavar="CSV", help="`ncu --csv --page raw` output (see `trainprof ncu-command`): "
                   "measured FLOPs and DRAM bytes per kernel on the same roofline")
    p.set_defaults(func=analyze)


def _numpy_without_blas_threads() -> None:
    """Import numpy with its OpenBLAS limited to one thread, then put the environment back.

    numpy's OpenBLAS starts a thread per core at import and they spin-wait for work that
    `analyze` never gives them (it does no BLAS; a CPU trace's matmul roof is measured with
    torch, whose own BLAS loads later and sees the user's environment): the CPU they take is
    what a pool of one process per core (`--engine local`, Ray) runs short of (measured:
    docs/benchmarks.md, "2026-11-25 evening"). A user's own OPENBLAS_NUM_THREADS is left as
    it is."""
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401 - imported for its side effect: OpenBLAS reads the variable now
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


def analyze(args: argparse.Namespace) -> int:
    _numpy_without_blas_threads()
    from trainprof.flags import from_args
    from trainprof.hardware.peaks import PeakOverrides
    from trainprof.jobs.analyze_job import AnalyzeJob, execute

    if args.top < 1:
        raise UsageError(f"--top must be ≥ 1, got {args.top}")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be ≥ 1, got {args.jobs}")
    if args.ray_start_timeout is not None and args.engine != "ray":
        raise UsageError("--ray-start-timeout needs --engine ray")
    job = AnalyzeJob(args.paths, top=args.top, step=args.step, roof=from_args(PeakOverrides, args).validate(),
                     jobs=args.jobs, engine=args.engine, ray_address=args.ray_address,
                     ray_start_timeout_s=args.ray_start_timeout, out=args.out, force=args.force,
                     perfetto=args.perfetto, ncu=args.ncu, plots=args.plots, report=not args.no_report)
    res = execute(job, warn=lambda line: print(f"trainprof: warning: {visible(line)}", file=sys.stderr))
    if args.json:
        print(res.text, end="")
    else:  # rich and the tables only here: ~30 ms of imports that `--json` does not pay
        from rich.console import Console

        from trainprof.report.analysis_terminal import print_analysis

        con = Console()
        print_analysis(res.record, con)
        if res.out is not None:
            con.print(visible(f"wrote {res.out / 'analysis.json'}"), markup=False)
            if res.report_note:
                con.print(res.report_note, markup=False, soft_wrap=True)
    return 0
