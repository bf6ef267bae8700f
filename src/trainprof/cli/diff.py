"""`trainprof diff BASE NEW`: what changed between two traces (before/after a fix)."""

from __future__ import annotations

import argparse

from trainprof.errors import UsageError


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

    from trainprof.jobs.diff import diff_traces
    from trainprof.report.diff_terminal import print_diff

    if args.top < 1:
        raise UsageError(f"--top must be ≥ 1, got {args.top}")
    result, text = diff_traces(args.base, args.new, top=args.top, out=args.out, force=args.force)
    if args.json:
        print(text, end="")
    else:
        print_diff(result, Console())
    return 0
