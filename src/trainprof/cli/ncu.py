"""`trainprof ncu-command TRACE`: the Nsight Compute command for the trace's top kernels."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.jobs.ncu import NcuJob

    p = sub.add_parser("ncu-command", help="print the ncu command that collects roofline data for a trace's top kernels",
                       description="Print the Nsight Compute (ncu) commands that profile the top-K kernels of a "
                       "trace with the roofline sections, export them as CSV, and read them back with "
                       "`trainprof analyze TRACE --ncu FILE.csv`.")
    add_flags(p, NcuJob)  # TRACE, --top, --program, --report (jobs/ncu.py)
    p.set_defaults(func=ncu_command)


def ncu_command(args: argparse.Namespace) -> int:
    from trainprof.controls import shell_join, visible
    from trainprof.flags import build
    from trainprof.jobs.ncu import NcuJob, ncu_plan

    job = build(NcuJob, args)
    plan = ncu_plan(job.trace, job.top, job.program, job.report)
    print("# 1. profile the top kernels (needs GPU performance counters: root, or the driver's")
    print("#    NVreg_RestrictProfilingToAdminUsers=0; each kernel is replayed ~40 times)")
    print(plan.collect)
    print("# 2. export the raw metrics as CSV")
    print(plan.export)
    print("# 3. place them on the roofline beside the trace-derived points")
    print(shell_join(["trainprof", "analyze", job.trace, "--ncu", f"{job.report}.csv", "--out", "ncu_analysis"]))
    print("# kernels:")
    for k in plan.kernels:  # visible(): a newline in a name would end the comment and start a command
        print(f"#   {k['share_pct']:5.1f}%  {visible(k['name'][:110])}")
    return 0
