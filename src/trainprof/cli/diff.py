"""`trainprof diff BASE NEW`: what changed between two traces (before/after a fix)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.jobs.diff import DiffJob

    p = sub.add_parser("diff", help="compare two traces: step time, per-op and per-kernel deltas")
    add_flags(p, DiffJob)  # BASE, NEW, --top, the output (jobs/diff.py)
    p.set_defaults(func=diff)


def diff(args: argparse.Namespace) -> int:
    from trainprof.report.console import console

    from trainprof.flags import build
    from trainprof.jobs.diff import DiffJob, diff_traces
    from trainprof.report.diff_terminal import print_diff

    job = build(DiffJob, args)
    o = job.output
    result, text = diff_traces(job.base, job.new, top=job.top.k, out=o.out, force=o.force)
    if o.json:
        print(text, end="")
    else:
        print_diff(result, console())
    return 0
