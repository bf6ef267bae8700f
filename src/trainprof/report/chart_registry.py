"""Every chart, registered once: its name, the records it is built from, its place in
report.html and the files it is drawn to (issue #44 item 5).

A chart is a Vega-Lite spec built by a function of report/charts.py; an entry here says when
and from what it is built, where report.html puts it (`slot`) and which files `--plots`, `run
--profile` and `tune` draw of it (`export`: a stem and the formats; report/plots.py). The page
(report/html.py) builds the entries in this order (its charts' JSON keeps it), report.md links
the exported files (report/markdown.py) and the loader looks for them (report/loader.py), all
from this table. Adding a chart: its builder in charts.py and its entry here; a slot the page
lays out generically (profile: "modules", "roofline", "critical"; page: "run", "system",
"ranks", "bench") shows it with no template change.

Two scopes. "profile": built from an analysis' first rank, once for the profile and once for
the optimised profile (ids `chart-<prefix>-<name>`), and drawn to files for every rank
(`<stem>_rank<N>` when there are several). "page": built from the report folder's records
(a `Bundle`), id `chart-<name>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import msgspec

from trainprof.recordtypes.base import or_default
from trainprof.report import charts
from trainprof.report.device_text import device_short
from trainprof.report.top_roofline import as_points, top_rows

# A page chart's builder takes report/loader.py's Bundle (typed Any here: the loader imports this
# table for the exported files' names, and no import circle is allowed, type-only ones included)
Bundle = Any

Spec = dict[str, Any]


@dataclass(frozen=True)
class Chart:
    """One chart. `build`: (rank, record path of the rank) -> spec for scope "profile", (Bundle)
    -> spec for "page"; None where the records do not have what it draws."""

    name: str
    scope: str  # "profile" or "page"
    build: Callable[..., Spec | None]
    slot: str  # where report.html lays it out (templates/report.html.j2), within its scope
    export: tuple[str, tuple[str, ...]] | None = None  # (file stem, formats) drawn by report/plots.py
    key: Callable[[Bundle], str] | None = None  # the id's name where the records choose it


def roofline_spec(r: Any, at: str) -> Spec | None:
    """The top-5 table's operators when priced (their times), else an older record's by-shape
    points; none without a point to draw (the page's table and the files draw the same rows)."""
    top = top_rows(r)
    points = as_points(top) if top else msgspec.to_builtins(r.roofline_points)  # the charts draw dicts
    if not points:
        return None
    return charts.roofline(r.roofline, points, f"Roofline, top {len(points)} ops: {device_short(r)} "
                           f"({or_default(r.roofline.source, None)})")


def _trace_steps(r: Any, at: str) -> Spec | None:
    per_step = r.per_step or []
    return charts.trace_steps(per_step) if r.has_gpu and len(per_step) > 1 else None


def _temporal(r: Any, at: str) -> Spec | None:
    return charts.temporal(r.temporal_breakdown, at) if r.has_gpu and r.temporal_breakdown.span_us else None


def _idle(r: Any, at: str) -> Spec | None:
    return charts.idle(r.idle_breakdown, at) if r.idle_breakdown.idle_us else None


def _step_split(b: Bundle) -> Spec | None:
    return charts.step_split(b.run.steps, b.run.summary.warmup_steps) if b.run and b.run.steps else None


def _training(b: Bundle) -> Spec | None:
    if not b.run:
        return None
    runs = [("baseline" if b.optimised_run else "run", b.run)]
    return charts.training(runs + ([("optimised", b.optimised_run)] if b.optimised_run else []))


def _system(b: Bundle) -> Spec | None:
    sysm = b.run.system if b.run else None  # UNSET (an older record) is falsy
    if not sysm:
        return None
    w = sysm.summary.energy.window  # UNSET in a record older than the field: falsy
    return charts.system(sysm.samples, tuple(w) if w else None)


def _ranks(b: Bundle) -> Spec | None:
    multi = b.analysis.multi_rank if b.analysis else None
    if not multi or not multi.per_rank or multi.device_timeline is False:
        return None
    return charts.ranks(multi.per_rank, bool(multi.step_time_us))


# page order: the charts' JSON in report.html lists them so (byte for byte as before the table)
CHARTS: tuple[Chart, ...] = (
    Chart("steps", "page", _step_split, "run"),
    Chart("training", "page", _training, "training"),
    Chart("system", "page", _system, "system"),
    Chart("steps", "profile", _trace_steps, "steps"),
    Chart("temporal", "profile", _temporal, "temporal"),
    Chart("idle", "profile", _idle, "idle"),
    Chart("roofline", "profile", roofline_spec, "roofline", export=("roofline", ("png", "svg"))),
    Chart("modules", "profile", lambda r, at: charts.modules(or_default(r.modules, None), f"{at}.modules"),
          "modules"),
    Chart("critical", "profile", lambda r, at: charts.critical_path(r.critical_path.steps if r.critical_path else []),
          "critical"),
    Chart("ranks", "page", _ranks, "ranks"),
    Chart("ladder", "page", lambda b: charts.ladder(b.tune.trials, b.tune.best.knobs) if b.tune else None, "ladder",
          export=("tune", ("png",))),
    Chart("memory", "page", lambda b: charts.memory(b.memory) if b.memory else None, "memory"),
    Chart("bench", "page", lambda b: charts.bench(b.bench.kind, b.bench.results) if b.bench else None, "bench",
          key=lambda b: f"bench-{b.bench.kind}"),  # one id per kind of benchmark
)


def slots(scope: str) -> dict[str, list[str]]:
    """Each slot of `scope`, empty: report.html's generic slots loop over what was built."""
    return {c.slot: [] for c in CHARTS if c.scope == scope}


def image_names() -> dict[str, tuple[str, ...]]:
    """Export stem -> the PNG names report.md may link, the first one there wins (a profile
    chart of a job: its rank 0's)."""
    return {c.export[0]: (f"{c.export[0]}.png",) + ((f"{c.export[0]}_rank0.png",) if c.scope == "profile" else ())
            for c in CHARTS if c.export}
