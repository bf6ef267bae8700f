"""`trainprof report DIR`: report.html (self-contained) and report.md from a folder's records."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from trainprof.controls import visible
from trainprof.errors import UsageError
from trainprof.flags import add_flags, build, option, section
from trainprof.options import OutputOptions
from trainprof.report.files import FORMATS, write_reports


def parse_formats(spec: str, flag: str) -> tuple[str, ...]:
    """`--format html,md` → ('html', 'md'): known formats, each once, in the order given."""
    fmts = [f.strip().lower() for f in spec.split(",") if f.strip()]
    bad = [f for f in fmts if f not in FORMATS]
    if bad or not fmts:
        raise UsageError(f"{flag} {spec}: choose from {', '.join(FORMATS)}")
    return tuple(dict.fromkeys(fmts))


@dataclass(frozen=True)
class ReportCommand:
    """`trainprof report`'s configuration (its flags: trainprof/flags.py)."""

    folder: str = option("", positional=True, metavar="DIR")
    """folder written by run, analyze --out, tune, memory or bench"""
    output: OutputOptions = section(OutputOptions(), flags=("out", "force"), metavars={"out": "DIR2"}, helps={
        "out": "where to write the reports (default: DIR itself)",
        "force": "write into an existing non-empty --out (its report.html/report.md are replaced if trainprof "
                 "wrote them; other files are left alone); without --out: replace DIR's report.html/report.md "
                 "even if trainprof did not write them"})
    """where the reports go"""
    formats: tuple[str, ...] = option(tuple(FORMATS), flag="--format", parse=parse_formats, show=",".join)
    """comma-separated: html, md"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write report.html and report.md from a run/analysis/tune/memory/bench folder",
                       description="Render whatever records DIR holds (run.json, analysis.json, tune.json, "
                       "memory.json, bench.json, ettr.json, diff.json, analysis_optimised.json) as one "
                       "self-contained HTML page and a Markdown experiment report.")
    add_flags(p, ReportCommand)
    p.set_defaults(func=report)


def report(args: argparse.Namespace) -> int:
    from trainprof import outdir, owned

    cmd = build(ReportCommand, args)
    out, force, formats = cmd.output.out, cmd.output.force, list(cmd.formats)
    names = [FORMATS[f] for f in formats]
    if out is not None:
        outdir.check_out(out, force=force, merge=force)
        if force:
            owned.check_replaceable(out, names)
    elif not force:  # in place: a report.md/report.html trainprof did not write stays (#45)
        owned.check_replaceable(cmd.folder, names, flag="report",
                                hint="pass --force to replace it, or --out DIR2 to write the reports elsewhere")
    with owned.tracking(out if out is not None else cmd.folder):  # listed in the folder's manifest
        written = write_reports(cmd.folder, out, formats)
    for p in written:
        print(visible(f"wrote {p}"))
    return 0
