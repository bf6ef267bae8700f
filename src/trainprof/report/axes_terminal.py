"""Terminal tables: communication per parallelism axis (analysis/job/axes_table.py) and the
pipeline bubble per stage (analysis/job/bubble.py). Renderers only."""

from __future__ import annotations

from rich.console import Console
from trainprof.report.console import escape

from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.collectives import JobCollectives, JobPipeline
from trainprof.report.figures import show
from trainprof.report.fit import FitTable


def print_axes(job: JobCollectives, con: Console) -> None:
    axes = or_default(job.axes, None)
    if not axes:
        return
    at = "analysis.multi_rank.collectives.axes"
    t = FitTable(title="Communication per parallelism axis (per rank, mean over the axis' ranks)", title_justify="left")
    for c in ("axis", "groups (rule)", "count", "time", "exposed", "waiting", "share of steps", "overlap",
              "busbw (GB/s)", "straggler (others waited)"):
        t.add_column(c, justify="left" if c in ("axis", "groups (rule)") else "right")
    for i, a in enumerate(axes):
        f = f"{at}[{i}]"
        strag = (f"rank {a.straggler_rank} ({show(a.straggler_caused_us, 'us', f + '.straggler_caused_us')})"
                 if a.straggler_rank is not None else "—")
        t.add_row(a.axis, escape(f"{', '.join(a.groups)} ({', '.join(a.rules)})"),
                  show(a.collectives, "int", f + ".collectives"), show(a.time_us, "us", f + ".time_us"),
                  show(a.exposed_us, "us", f + ".exposed_us"), show(a.wait_us, "us", f + ".wait_us"),
                  show(a.share_pct, "pct_value", f + ".share_pct"), show(a.compute_overlap_pct, "pct_value0", f + ".compute_overlap_pct"),
                  show(a.busbw_gbs, "g3", f + ".busbw_gbs"), strag)
    con.print(t)


def print_pipeline(jp: JobPipeline, con: Console) -> None:
    for k, p in enumerate(jp.pipelines):
        at = f"analysis.multi_rank.pipeline.pipelines[{k}]"
        t = FitTable(title=(f"Pipeline bubble, ranks {', '.join(map(str, p.ranks))} ({p.schedule or 'schedule ?'}, "
                            f"p = {p.stages}, m = {p.microbatches}, steps {p.steps[0]}–{p.steps[-1]}): measured "
                            f"{show(p.measured_pct, 'pct_value', at + '.measured_pct')}, the schedule's (p−1)/(m+p−1) "
                            f"{show(p.inherent_pct, 'pct_value', at + '.inherent_pct')}; m = {p.what_if_microbatches} → "
                            f"{show(p.what_if_inherent_pct, 'pct_value', at + '.what_if_inherent_pct')}"),
                     title_justify="left")
        for c in ("stage", "rank", "busy", "bubble", "bubble %", "inherent", "excess", "recv wait", "imbalance"):
            t.add_column(c, justify="right")
        for i, s in enumerate(p.per_stage):
            f = f"{at}.per_stage[{i}]"
            t.add_row(str(s.stage), str(s.rank), show(s.busy_us, "us", f + ".busy_us"), show(s.bubble_us, "us", f + ".bubble_us"),
                      show(s.bubble_pct, "pct_value", f + ".bubble_pct"), show(s.inherent_us, "us", f + ".inherent_us"),
                      show(s.excess_us, "us", f + ".excess_us"), show(s.recv_wait_us, "us", f + ".recv_wait_us"),
                      show(s.imbalance_us, "us", f + ".imbalance_us"))
        con.print(t)
