"""The findings a report lists, in one order for report.md and report.html: the first rank's
and the job's findings as written (each Struct as its dict, for the templates), each with its path in the record (report/figures.py),
info findings (a gain under 0.5%: diagnose/finding.py) after every claim, the claims by what a
fix gives back (the projection where there is one, else the bound: analysis/graph/projection.py
`rank_key`, the order diagnose/engine.py writes a rank's findings in). A folder whose analysis
holds none (a run without a profile) lists the run's."""

from __future__ import annotations

import msgspec

from trainprof.ranking import rank_key
from trainprof.recordtypes.analysis import Analysis, Finding
from trainprof.recordtypes.run import RunRecord


def listed(a: Analysis | None, name: str, run: RunRecord | None = None) -> list[tuple[str, dict]]:
    """(path, finding) pairs of analysis `a` (the record `name`: "analysis", "optimised"), else of `run`."""
    out: list[tuple[str, Finding]] = []
    if a and a.ranks:
        out = [(f"{name}.ranks[0].findings[{i}]", f) for i, f in enumerate(a.ranks[0].findings or [])]
        if a.multi_rank:
            out += [(f"{name}.multi_rank.findings[{i}]", f) for i, f in enumerate(a.multi_rank.findings or [])]
    if not out and run is not None:
        out = [(f"run.findings[{i}]", f) for i, f in enumerate(run.findings or [])]
    out.sort(key=lambda af: (af[1].severity == "info", rank_key(af[1])))
    return [(at, msgspec.to_builtins(f)) for at, f in out]
