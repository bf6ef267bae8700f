"""Terminal tables for the job's matched collectives (analysis/collectives_job.py)."""

from __future__ import annotations

from msgspec import UNSET
from rich.console import Console

from trainprof.recordtypes.analysis import JobCollectives
from trainprof.recordtypes.base import or_default
from trainprof.report.fit import FitTable
from trainprof.report.units import us as fmt_us


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
    for c in ("group", "op", "count", "bytes", "latency p50", "skew p50", "skew max", "busbw p50", "overlap p50"):
        t.add_column(c, justify="left" if c in ("group", "op") else "right")
    for g in job.groups:
        bus = "—" if g.median_busbw_gbs is None else f"{g.median_busbw_gbs:,.2f} GB/s"
        ov = or_default(g.median_compute_overlap_pct, None)
        t.add_row(str(g.group), g.op, str(g.count), _bytes(g.bytes), fmt_us(g.median_latency_us),
                  fmt_us(g.median_skew_us), fmt_us(g.max_skew_us), bus, "—" if ov is None else f"{ov:.0f}%")
    con.print(t)
    t = FitTable(title="Waits per rank (collectives matched by content; clocks aligned on collective ends)",
                 title_justify="left")
    for c in ("rank", "matched", "dropped (start/end)", "waited", "others waited for it (mean)", "share", "last",
              "host step entry (median)", "clock offset"):
        t.add_column(c, justify="right")
    late = {x.rank: x.median_late_us for x in job.lateness.per_rank} if job.lateness else {}
    for r in job.per_rank:
        t.add_row(str(r.rank), str(or_default(r.matched, "—")),
                  "—" if r.dropped_head is UNSET else f"{r.dropped_head}/{r.dropped_tail}", fmt_us(r.wait_us),
                  fmt_us(or_default(r.others_wait_us, r.caused_wait_us)), f"{r.caused_share_pct:.0f}%",
                  str(r.last_count), fmt_us(late[r.rank]) if r.rank in late else "—", fmt_us(r.clock_offset_us))
    con.print(t)
    for note in or_default(job.notes, []):
        con.print(f"  note: {note}", markup=False, highlight=False)  # notes name process groups: trace text
