"""`trainprof ettr DIR`: effective training time ratio of a run across its restarts."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainprof.controls import visible


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.jobs.ettr import EttrJob

    p = sub.add_parser("ettr", help="effective training time ratio of a run (from its journal), lost time by cause")
    add_flags(p, EttrJob)  # DIR, --json (jobs/ettr.py)
    p.set_defaults(func=ettr_cmd)


def ettr_cmd(args: argparse.Namespace) -> int:
    from trainprof.report.console import console

    from trainprof import jsontext
    from trainprof.flags import build
    from trainprof.jobs.ettr import EttrJob, ettr_job
    from trainprof.report.fit import FitTable

    job = build(EttrJob, args)
    result = ettr_job(job.run_dir)
    d = Path(job.run_dir)
    if job.output.json:
        print(jsontext.dumps(result))
        return 0
    con = console()
    t = FitTable(title=f"ETTR {100 * (result.ettr or 0):.1f}% — productive step time / wall time "
              f"({result.sessions} sessions, {result.failures} failures)", title_justify="left")
    t.add_column("")
    t.add_column("seconds", justify="right")
    t.add_column("share", justify="right")
    wall = result.wall_s or 1.0
    t.add_row("productive steps", f"{result.productive_s:.2f}", f"{100 * result.productive_s / wall:.1f}%")
    for k, v in result.lost_s.items():
        t.add_row(f"lost: {k.replace('_', ' ')}", f"{v:.2f}", f"{100 * v / wall:.1f}%")
    t.add_row("wall time", f"{result.wall_s:.2f}", "100%")
    con.print(t)
    con.print(visible(f"wrote {d / 'ettr.json'}"), markup=False)  # a path is shown, never acted on
    return 0
