"""`trainprof whatif TRACE` as a job: the trace read, its dependency graph re-timed with the
edits (analysis/graph/whatif.py), the projected step time and its bounds returned as the
trainprof.whatif/1 record."""

from __future__ import annotations


def whatif_job(trace: str, *, remove: list[str], scale: list[str], step: int | None = None, top: int = 5) -> dict:
    """The what-if record; `remove`: the --remove KINDs, `scale`: the --scale PATTERN=F
    edits (checked before the trace is read)."""
    from trainprof.analysis.graph.whatif import parse_remove, parse_scale, whatif_trace
    from trainprof.trace import read_trace

    edits = [parse_remove(r) for r in remove] + [parse_scale(s) for s in scale]
    return whatif_trace(read_trace(trace), file=trace, edits=edits, step=step, top_k=top)
