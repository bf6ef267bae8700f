"""`trainprof ncu-command TRACE`: the Nsight Compute command for the trace's top kernels."""

from __future__ import annotations

import argparse

from trainprof.errors import UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ncu-command", help="print the ncu command that collects roofline data for a trace's top kernels",
                       description="Print the Nsight Compute (ncu) commands that profile the top-K kernels of a "
                       "trace with the roofline sections, export them as CSV, and read them back with "
                       "`trainprof analyze TRACE --ncu FILE.csv`.")
    p.add_argument("trace", metavar="TRACE", help="a Kineto trace of the program to profile")
    p.add_argument("--top", type=int, default=5, help="kernels to profile (default 5)")
    p.add_argument("--program", default="python train.py", help="the command that runs your training (default: %(default)s)")
    p.add_argument("--report", default="trainprof_ncu", help="ncu report name (default: %(default)s)")
    p.set_defaults(func=ncu_command)


def ncu_command(args: argparse.Namespace) -> int:
    from trainprof.controls import shell_join, visible
    from trainprof.jobs.ncu import ncu_plan

    if args.top < 1:
        raise UsageError(f"--top must be ≥ 1, got {args.top}")
    plan = ncu_plan(args.trace, args.top, args.program, args.report)
    print("# 1. profile the top kernels (needs GPU performance counters: root, or the driver's")
    print("#    NVreg_RestrictProfilingToAdminUsers=0; each kernel is replayed ~40 times)")
    print(plan.collect)
    print("# 2. export the raw metrics as CSV")
    print(plan.export)
    print("# 3. place them on the roofline beside the trace-derived points")
    print(shell_join(["trainprof", "analyze", args.trace, "--ncu", f"{args.report}.csv", "--out", "ncu_analysis"]))
    print("# kernels:")
    for k in plan.kernels:  # visible(): a newline in a name would end the comment and start a command
        print(f"#   {k['share_pct']:5.1f}%  {visible(k['name'][:110])}")
    return 0
