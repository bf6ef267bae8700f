"""`trainprof analyze PATH...`: analyse Kineto traces (files or folders of per-rank files)."""

from __future__ import annotations

import argparse
import functools
import os
import sys

from trainprof.controls import visible


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.jobs.analyze_config import AnalyzeJob

    p = sub.add_parser("analyze", help="analyse Kineto traces: GPU time breakdown, idle causes, top ops",
                       description="Analyse one or more Kineto/Chrome traces (.json, .json.gz; a folder "
                       "or glob means one trace per rank). A trace that cannot be read is named with its "
                       "error in analysis.json's `unreadable` and the others are analysed; exit code 2 "
                       "only when none can be read.")
    add_flags(p, AnalyzeJob)  # SOURCE, the output, --top, the engine, the roofline (jobs/analyze_config.py)
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


def _tables(record, most: int | None = None) -> str:  # noqa: ANN001 - an Analysis; its type's import is what --help spares
    """The tables as the terminal shows them (rich's capture renders with this console's width
    and colours), rendered while the reports are written (jobs/analyze_job.py). rich and the
    tables are imported only here: ~30 ms that `--json` does not pay."""
    from trainprof.report.console import console

    from trainprof.report.analysis_terminal import print_analysis

    con = console()
    with con.capture() as cap:
        print_analysis(record, con, most)
    return cap.get()


def analyze(args: argparse.Namespace) -> int:
    _numpy_without_blas_threads()
    from trainprof.flags import build
    from trainprof.jobs.analyze_config import AnalyzeJob
    from trainprof.jobs.analyze_job import execute
    from trainprof.report.rank_detail import DETAIL_RANKS

    job = build(AnalyzeJob, args)
    res = execute(job, warn=lambda line: print(f"trainprof: warning: {visible(line)}", file=sys.stderr),
                  render=None if job.output.json else functools.partial(
                      _tables, most=None if job.all_ranks else DETAIL_RANKS))
    if job.output.json:
        print(res.text, end="")
    else:
        sys.stdout.write(res.rendered)
        if res.out is not None:
            from trainprof.report.console import console

            con = console()
            con.print(visible(f"wrote {res.out / 'analysis.json'}"), markup=False)
            if res.report_note:
                con.print(res.report_note, markup=False, soft_wrap=True)
    return 0
