"""report.html's Ranks section as tables (report/view_table.py): the per-rank step table, the
matched collectives, who waited for whom, the parallelism axes, each pipeline's stages and a
training job's per-rank phases. Every figure through report/figures.show with its field in
analysis.json (or run.json), as the template showed it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from trainprof.recordtypes.base import or_default
from trainprof.report.figures import show
from trainprof.report.formatting import duration
from trainprof.report.view_table import Cell, Table, head, table

AT = "analysis.multi_rank"


@dataclass(frozen=True)
class RanksView:
    per_rank: Table | None  # None without a multi-rank analysis
    groups: Table | None  # the matched collectives; None without them
    waits: Table | None
    axes: Table | None  # None without axes
    stages: tuple[Table, ...]  # one per pipeline
    job: Table | None  # run.json's distributed per-rank phases


def _fig(v: Any, fmt: str, field: str) -> Cell:
    return Cell(show(v, fmt, field), "n")


def _per_rank(multi: Any) -> Table:
    if multi.device_timeline is False:  # a CPU job: the host step only
        return table(head("rank", "#host step"), tuple(
            (Cell(p.rank), _fig(p.step_time_us, "us", f"{AT}.per_rank[{i}].step_time_us"))
            for i, p in enumerate(multi.per_rank)))
    rows = []
    for i, p in enumerate(multi.per_rank):
        f = f"{AT}.per_rank[{i}]"
        badge = Markup("").join(Markup('<span class="bad">straggler (+{}% compute)</span>').format(
            f"{x.compute_excess_pct:.1f}") for x in multi.stragglers if x.rank == p.rank)
        rows.append((Cell(p.rank), _fig(p.step_time_us, "us", f + ".step_time_us"),
                     _fig(p.compute_us, "us", f + ".compute_us"),
                     _fig(p.communication_us, "us", f + ".communication_us"),
                     Cell(show(p.idle_us, "us", f + ".idle_us"), "n", br=True),
                     _fig(p.wait_us, "us", f + ".wait_us"), Cell(badge)))
    return table(head("rank", "#step", "#compute", "#communication", "#idle", "#waiting for others", ""), tuple(rows))


def _groups(cj: Any) -> Table:
    link = or_default(cj.link, None)
    rows = []
    for i, g in enumerate(cj.groups):
        f = f"{AT}.collectives.groups[{i}]"
        rows.append((Cell(g.group), Cell(g.op), _fig(g.count, "int", f + ".count"),
                     Cell("{:,}".format(g.bytes) if g.bytes else "—", "n"),
                     _fig(g.median_latency_us, "us", f + ".median_latency_us"),
                     _fig(g.median_skew_us, "us", f + ".median_skew_us"), _fig(g.max_skew_us, "us", f + ".max_skew_us"),
                     _fig(g.median_busbw_gbs, "g3", f + ".median_busbw_gbs"),
                     *((_fig(or_default(g.link_pct, None), "pct_value0", f + ".link_pct"),) if link else ()),
                     _fig(g.median_compute_overlap_pct, "pct_value0", f + ".median_compute_overlap_pct")))
    names = ("group", "op", "#count", "#bytes", "#latency p50", "#skew p50", "#skew max", "#busbw p50 (GB/s)",
             *(("#busbw p50 of the link",) if link else ()), "#overlap with compute p50")
    return table(head(*names), tuple(rows))


def _waits(cj: Any) -> Table:
    rows = []
    for i, r in enumerate(cj.per_rank):
        f = f"{AT}.collectives.per_rank[{i}]"
        others = or_default(r.others_wait_us, None)
        rows.append((Cell(r.rank), _fig(r.wait_us, "us", f + ".wait_us"),
                     _fig(others, "us", f + ".others_wait_us") if others is not None
                     else _fig(r.caused_wait_us, "us", f + ".caused_wait_us"),
                     _fig(r.caused_share_pct, "pct_value0", f + ".caused_share_pct"),
                     _fig(r.last_count, "int", f + ".last_count"), _fig(r.clock_offset_us, "us", f + ".clock_offset_us")))
    return table(head("rank", "#waited", "#others waited for it (mean)", "#share of waits", "#last to arrive",
                      "#clock offset"), tuple(rows))


def _axes(axes: list) -> Table:
    rows = []
    for i, a in enumerate(axes):
        f = f"{AT}.collectives.axes[{i}]"
        straggler = (f"rank {a.straggler_rank} ({show(a.straggler_caused_us, 'us', f + '.straggler_caused_us')})"
                     if a.straggler_rank is not None else "—")
        rows.append((Cell(a.axis), Cell(f"{', '.join(a.groups)} ({', '.join(a.rules)})"),
                     _fig(a.collectives, "int", f + ".collectives"), _fig(a.time_us, "us", f + ".time_us"),
                     _fig(a.exposed_us, "us", f + ".exposed_us"), _fig(a.wait_us, "us", f + ".wait_us"),
                     _fig(a.share_pct, "pct_value", f + ".share_pct"),
                     _fig(a.compute_overlap_pct, "pct_value0", f + ".compute_overlap_pct"),
                     _fig(a.busbw_gbs, "g3", f + ".busbw_gbs"), Cell(straggler)))
    return table(head("axis", "groups (rule)", "#count", "#time", "#exposed", "#waiting", "#share of steps",
                      "#overlap with compute", "#busbw (GB/s)", "straggler (others waited)"), tuple(rows))


def _stages(p: Any, at: str) -> Table:
    rows = []
    for i, s in enumerate(p.per_stage):
        f = f"{at}.per_stage[{i}]"
        rows.append((Cell(s.stage, "n"), Cell(s.rank, "n"), _fig(s.busy_us, "us", f + ".busy_us"),
                     _fig(s.bubble_us, "us", f + ".bubble_us"), _fig(s.bubble_pct, "pct_value", f + ".bubble_pct"),
                     _fig(s.inherent_us, "us", f + ".inherent_us"), _fig(s.excess_us, "us", f + ".excess_us"),
                     _fig(s.recv_wait_us, "us", f + ".recv_wait_us"), _fig(s.imbalance_us, "us", f + ".imbalance_us")))
    return table(head("#stage", "#rank", "#busy", "#bubble", "#bubble %", "#inherent", "#excess", "#recv wait",
                      "#imbalance"), tuple(rows))


def _job(d: Any) -> Table:
    # run.json's distributed block (recordtypes/run_parts.Distributed): a phase the rank lacks shows as —
    rows = tuple((Cell(p.rank), *(Cell(duration(getattr(p, k), "s", "step"), "n")
                                  for k in ("step_time_s", "forward_s", "backward_s", "optimizer_s", "data_s")))
                 for p in d.per_rank or [])
    return table(head("rank", "#step", "#forward", "#backward", "#optimizer", "#data"), rows)


def ranks_view(multi: Any, run: Any) -> RanksView:
    cj = multi.collectives if multi else None
    axes = or_default(cj.axes, None) if cj else None
    pipe = or_default(multi.pipeline, None) if multi else None
    d = run.distributed if run else None
    return RanksView(
        per_rank=_per_rank(multi) if multi else None,
        groups=_groups(cj) if cj else None, waits=_waits(cj) if cj else None,
        axes=_axes(axes) if axes else None,
        stages=tuple(_stages(p, f"{AT}.pipeline.pipelines[{i}]") for i, p in enumerate(pipe.pipelines)) if pipe else (),
        job=_job(d) if d else None)
