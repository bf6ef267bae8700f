"""`trainprof diff BASE NEW`: what changed between two traces (before/after a fix)."""

from __future__ import annotations

import argparse

from trainprof.errors import UsageError

ALL = 10**9  # keep every op/kernel for the comparison; only the printout is cut to --top


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diff", help="compare two traces: step time, per-op and per-kernel deltas")
    p.add_argument("base", metavar="BASE", help="trace before (a file, or a run folder: its trace; rank 0's of several)")
    p.add_argument("new", metavar="NEW", help="trace after (the same)")
    p.add_argument("--top", type=int, default=10, help="rows per table (default 10)")
    p.add_argument("--out", help="folder for diff.json and diff.md; must not exist or be empty")
    p.add_argument("--force", action="store_true", help="replace an existing non-empty --out")
    p.add_argument("--json", action="store_true", help="print diff.json to stdout")
    p.set_defaults(func=diff)


def diff(args: argparse.Namespace) -> int:
    from rich.console import Console

    from trainprof import atomic
    from trainprof.analysis.job.diff import diff_record
    from trainprof.jobs.analyze import add_findings, analyze_one, expand_paths
    from trainprof.jobs.run import folder_trace
    from trainprof.report.diff_terminal import diff_markdown, print_diff

    if args.top < 1:
        raise UsageError(f"--top must be ≥ 1, got {args.top}")
    out = atomic.check_out(args.out, force=args.force) if args.out else None
    files = []
    for p in (args.base, args.new):
        found = expand_paths([folder_trace(p)])
        if len(found) != 1:
            raise UsageError(f"{p}: diff compares single traces; this folder holds {len(found)}")
        files.append(str(found[0]))
    base, new = (analyze_one(f, ALL) for f in files)
    for r in (base, new):
        add_findings(r, None)  # the diff compares findings too
    result = diff_record(base, new, args.top)
    text = atomic.dumps(result) + "\n"
    if out is not None:
        with atomic.staged_dir(out, force=args.force) as stage:
            atomic.write_text(stage / "diff.json", text)
            atomic.write_text(stage / "diff.md", diff_markdown(result) + "\n")
    if args.json:
        print(text, end="")
    else:
        print_diff(result, Console())
    return 0
