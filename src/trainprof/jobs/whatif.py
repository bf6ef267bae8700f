"""`trainprof whatif TRACE` as a job: the trace read, its dependency graph re-timed with the
edits (analysis/graph/whatif.py), the projected step time and its bounds returned as the
trainprof.whatif/1 record."""

from __future__ import annotations

from dataclasses import dataclass

from trainprof.flags import option, section
from trainprof.options import OutputOptions, TopK


@dataclass(frozen=True)
class WhatifJob:
    """`trainprof whatif`'s configuration (its flags: trainprof/flags.py)."""

    trace: str = option("", positional=True, metavar="TRACE")
    """a Kineto trace (.json or .json.gz)"""
    remove: tuple[str, ...] = option((), repeat=True, metavar="KIND")
    """data_loading, host_sync, exposed_comm, launch_overhead or allocator (repeatable)"""
    scale: tuple[str, ...] = option((), repeat=True, metavar="PATTERN=F")
    """kernels and ops whose name matches the regex PATTERN take F × their time, e.g. 'gemm=0.5' (repeatable)"""
    step: int | None = None
    """only this ProfilerStep number (default: every step)"""
    top: TopK = section(TopK(), helps={"k": "ops shown on the critical path"})
    """rows of the critical path's table"""
    output: OutputOptions = section(OutputOptions(), flags=("json",), helps={
        "json": "print the trainprof.whatif/1 record"})
    """what is printed"""


def whatif_job(trace: str, *, remove: list[str], scale: list[str], step: int | None = None,
               top: int = TopK.k) -> dict:
    """The what-if record; `remove`: the --remove KINDs, `scale`: the --scale PATTERN=F
    edits (checked before the trace is read)."""
    from trainprof.analysis.graph.whatif import parse_remove, parse_scale, whatif_trace
    from trainprof.trace import read_trace

    edits = [parse_remove(r) for r in remove] + [parse_scale(s) for s in scale]
    return whatif_trace(read_trace(trace), file=trace, edits=edits, step=step, top_k=top)
