"""`trainprof whatif TRACE`: re-time a trace's dependency graph with edits and project the step time."""

from __future__ import annotations

import argparse

from trainprof import jsontext


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.jobs.whatif import WhatifJob

    p = sub.add_parser("whatif", help="project the step time if a cause were removed or a kernel/op were faster")
    add_flags(p, WhatifJob)  # TRACE, the edits, --step, --top, --json (jobs/whatif.py)
    p.set_defaults(func=whatif_cmd)


def whatif_cmd(args: argparse.Namespace) -> int:
    from trainprof.flags import build
    from trainprof.jobs.whatif import WhatifJob, whatif_job

    job = build(WhatifJob, args)
    result = whatif_job(job.trace, remove=list(job.remove), scale=list(job.scale), step=job.step, top=job.top.k)
    if job.output.json:
        print(jsontext.dumps(result))
        return 0
    from trainprof.report.whatif_terminal import print_whatif

    print_whatif(result)
    return 0
