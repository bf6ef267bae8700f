"""Terminal tables for the job's matched collectives (analysis/collectives_job.py)."""

from __future__ import annotations

from rich.console import Console

from trainprof.recordtypes.analysis import JobCollectives
from trainprof.recordtypes.base import or_default
from trainprof.report.figures import show
from trainprof.report.fit import FitTable


def _bytes(b) -> str:
    if not b:
        return "—"
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= div:
            return f"{b / div:,.1f} {unit}"
    return f"{b} B"


def print_collectives(job: JobCollectives, con: Console) -> None:
    note = "" if job.consistent else f"; unmatched per rank: {job.unmatched}"
    if job.world_size > job.ranks:
        note += f"; {job.ranks} of {job.world_size} ranks: waits and skews among these only"
    t = FitTable(title=f"Collectives across {job.ranks} ranks ({job.matched} matched{note})",
                 title_justify="left")
    for c in ("group", "op", "count", "bytes", "latency p50", "skew p50", "skew max", "busbw p50 (GB/s)",
              "overlap p50"):
        t.add_column(c, justify="left" if c in ("group", "op") else "right")
    at = "analysis.multi_rank.collectives"
    for i, g in enumerate(job.groups):
        f = f"{at}.groups[{i}]"
        t.add_row(str(g.group), g.op, show(g.count, "int", f + ".count"), _bytes(g.bytes),
                  show(g.median_latency_us, "us", f + ".median_latency_us"),
                  show(g.median_skew_us, "us", f + ".median_skew_us"), show(g.max_skew_us, "us", f + ".max_skew_us"),
                  show(g.median_busbw_gbs, "g3", f + ".median_busbw_gbs"),
                  show(or_default(g.median_compute_overlap_pct, None), "pct0", f + ".median_compute_overlap_pct"))
    con.print(t)
    t = FitTable(title="Waits per rank (clock offsets from collective ends)", title_justify="left")
    for c in ("rank", "waited", "others waited for it", "share", "last", "clock offset"):
        t.add_column(c, justify="right")
    for i, r in enumerate(job.per_rank):
        f = f"{at}.per_rank[{i}]"
        t.add_row(str(r.rank), show(r.wait_us, "us", f + ".wait_us"), show(r.caused_wait_us, "us", f + ".caused_wait_us"),
                  show(r.caused_share_pct, "pct0", f + ".caused_share_pct"), show(r.last_count, "int", f + ".last_count"),
                  show(r.clock_offset_us, "us", f + ".clock_offset_us"))
    con.print(t)
