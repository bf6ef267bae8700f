"""`trainprof report DIR`: report.html (self-contained) and report.md from a folder's records."""

from __future__ import annotations

import argparse

from trainprof.controls import visible
from trainprof.errors import UsageError

from trainprof.report.files import FORMATS, write_reports


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write report.html and report.md from a run/analysis/tune/memory/bench folder",
                       description="Render whatever records DIR holds (run.json, analysis.json, tune.json, "
                       "memory.json, bench.json, ettr.json, diff.json, analysis_optimised.json) as one "
                       "self-contained HTML page and a Markdown experiment report.")
    p.add_argument("folder", metavar="DIR", help="folder written by run, analyze --out, tune, memory or bench")
    p.add_argument("--out", metavar="DIR2", help="where to write the reports (default: DIR itself)")
    p.add_argument("--format", default="html,md", help="comma-separated: html, md (default html,md)")
    p.add_argument("--force", action="store_true",
                   help="write into an existing non-empty --out (its report.html/report.md are replaced if "
                   "trainprof wrote them; other files are left alone)")
    p.set_defaults(func=report)


def _formats(spec: str) -> list[str]:
    fmts = [f.strip().lower() for f in spec.split(",") if f.strip()]
    bad = [f for f in fmts if f not in FORMATS]
    if bad or not fmts:
        raise UsageError(f"--format {spec}: choose from {', '.join(FORMATS)}")
    return list(dict.fromkeys(fmts))


def report(args: argparse.Namespace) -> int:
    from trainprof import outdir, owned

    formats = _formats(args.format)
    if args.out is not None:
        outdir.check_out(args.out, force=args.force, merge=args.force)
        if args.force:
            owned.check_replaceable(args.out, [FORMATS[f] for f in formats])
    with owned.tracking(args.out if args.out is not None else args.folder):  # listed in the folder's manifest
        written = write_reports(args.folder, args.out, formats)
    for p in written:
        print(visible(f"wrote {p}"))
    return 0
