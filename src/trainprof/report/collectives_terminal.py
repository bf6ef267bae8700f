"""Terminal tables for the job's matched collectives (analysis/job/collectives_job.py)."""

from __future__ import annotations

from msgspec import UNSET
from rich.console import Console

from trainprof.recordtypes.analysis import JobCollectives
from trainprof.recordtypes.base import or_default
from trainprof.report.figures import show
from trainprof.report.formatting import size
from trainprof.report.fit import FitTable


def print_collectives(job: JobCollectives, con: Console) -> None:
    note = "" if job.consistent else f"; unmatched per rank: {job.unmatched}"
    if job.world_size > job.ranks:
        note += f"; {job.ranks} of {job.world_size} ranks: waits and skews among these only"
    t = FitTable(title=f"Collectives across {job.ranks} ranks ({job.matched} matched{note})",
                 title_justify="left")
    lk = or_default(job.link, None)  # the link busbw is a share of (analysis/job/link_share.py)
    for c in ("group", "op", "count", "bytes", "latency p50", "skew p50", "skew max", "busbw p50 (GB/s)",
              *(["of link"] if lk else []), "overlap p50"):
        t.add_column(c, justify="left" if c in ("group", "op") else "right")
    at = "analysis.multi_rank.collectives"
    for i, g in enumerate(job.groups):
        f = f"{at}.groups[{i}]"
        t.add_row(str(g.group), g.op, show(g.count, "int", f + ".count"), size(g.bytes, si=True) if g.bytes else "—",
                  show(g.median_latency_us, "us", f + ".median_latency_us"),
                  show(g.median_skew_us, "us", f + ".median_skew_us"), show(g.max_skew_us, "us", f + ".max_skew_us"),
                  show(g.median_busbw_gbs, "g3", f + ".median_busbw_gbs"),
                  *([show(or_default(g.link_pct, None), "pct_value0", f + ".link_pct")] if lk else []),
                  show(or_default(g.median_compute_overlap_pct, None), "pct_value0", f + ".median_compute_overlap_pct"))
    con.print(t)
    if lk:
        con.print(f"  link: {lk.name}, {show(lk.gbs, 'g3', at + '.link.gbs')} GB/s per direction ({lk.basis}; "
                  f"{lk.source})", markup=False, highlight=False)
    t = FitTable(title="Waits per rank (collectives matched by content; clocks aligned on collective ends)",
                 title_justify="left")
    for c in ("rank", "matched", "dropped (start/end)", "waited", "others waited for it (mean)", "share", "last",
              "host step entry (median)", "clock offset"):
        t.add_column(c, justify="right")
    late = {x.rank: x.median_late_us for x in job.lateness.per_rank} if job.lateness else {}
    late_at = {x.rank: i for i, x in enumerate(job.lateness.per_rank)} if job.lateness else {}
    for i, r in enumerate(job.per_rank):
        f = f"{at}.per_rank[{i}]"
        others = (show(r.others_wait_us, "us", f + ".others_wait_us") if r.others_wait_us is not UNSET
                  else show(r.caused_wait_us, "us", f + ".caused_wait_us"))
        entry = (show(late[r.rank], "us", f"{at}.lateness.per_rank[{late_at[r.rank]}].median_late_us")
                 if r.rank in late else "—")
        t.add_row(str(r.rank), str(or_default(r.matched, "—")),
                  "—" if r.dropped_head is UNSET else f"{r.dropped_head}/{r.dropped_tail}",
                  show(r.wait_us, "us", f + ".wait_us"), others,
                  show(r.caused_share_pct, "pct_value0", f + ".caused_share_pct"), show(r.last_count, "int", f + ".last_count"),
                  entry, show(r.clock_offset_us, "us", f + ".clock_offset_us"))
    con.print(t)
    for note in or_default(job.notes, []):
        con.print(f"  note: {note}", markup=False, highlight=False)  # notes name process groups: trace text
