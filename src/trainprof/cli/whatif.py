"""`trainprof whatif TRACE`: re-time a trace's dependency graph with edits and project the step time."""

from __future__ import annotations

import argparse

from trainprof import jsontext
from trainprof.errors import UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("whatif", help="project the step time if a cause were removed or a kernel/op were faster")
    p.add_argument("trace", metavar="TRACE", help="a Kineto trace (.json or .json.gz)")
    p.add_argument("--remove", action="append", default=[], metavar="KIND",
                   help="data_loading, host_sync, exposed_comm, launch_overhead or allocator (repeatable)")
    p.add_argument("--scale", action="append", default=[], metavar="PATTERN=F",
                   help="kernels and ops whose name matches the regex PATTERN take F × their time, "
                        "e.g. 'gemm=0.5' (repeatable)")
    p.add_argument("--step", type=int, help="only this ProfilerStep number (default: every step)")
    p.add_argument("--top", type=int, default=5, help="ops shown on the critical path (default 5)")
    p.add_argument("--json", action="store_true", help="print the trainprof.whatif/1 record")
    p.set_defaults(func=whatif_cmd)


def whatif_cmd(args: argparse.Namespace) -> int:
    from trainprof.jobs.whatif import whatif_job

    if args.top < 1:
        raise UsageError(f"--top must be ≥ 1, got {args.top}")
    result = whatif_job(args.trace, remove=args.remove, scale=args.scale, step=args.step, top=args.top)
    if args.json:
        print(jsontext.dumps(result))
        return 0
    from trainprof.report.whatif_terminal import print_whatif

    print_whatif(result)
    return 0
