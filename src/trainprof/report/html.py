"""report.html: one self-contained page that opens offline (inline CSS, data and scripts).

report/templates/report.html.j2 renders the page through the one Jinja environment
(report/templating.py), autoescaped, so every string taken from a record (kernel names hold
< > &, config values, finding texts) is escaped; its `|safe` values are the vendored Vega
scripts, report.js and the charts' JSON (`_script_json` escapes < > & in it). Charts are Vega-Lite specs
(charts.py) drawn in the browser by the vendored Vega libraries (vendor/, inlined); their
data travels as JSON in a <script type="application/json"> block with < > & written as
\\u escapes, so no record string can close the block. Sections appear only when their record
is in the folder.

Cost: the vendored scripts are read as text (~0.8 MB); the template's compile is cached
(report/templating.py).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Iterable

from trainprof.recordtypes.analysis import Analysis
from trainprof.recordtypes.base import or_default
from trainprof.report import chart_registry
from trainprof.report.chart_registry import Chart
from trainprof.report.figures import LABELS, show, steps_shown
from trainprof.report.loader import Bundle
from trainprof.report.templating import render, static_text
from trainprof.report import view_memory
from trainprof.report.view_bench import bench_table
from trainprof.report.view_profile import profile_view
from trainprof.report.view_steps import step_split_table
from trainprof.report.view_ranks import ranks_view
from trainprof.report.view_tune import ladder_table
from trainprof.report.view_system import system_view
from trainprof.report.view_findings import findings_view
from trainprof.report.formatting import peak_provenance

VENDOR = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")  # versions: docs/dependencies.md


def _cards(b: Bundle) -> list[dict[str, str]]:
    """Headline numbers: from run.json when present, else the trace's, plus tune and ETTR."""
    cards: list[dict[str, str]] = []
    if b.run:
        s, d, at = b.run.summary, b.run.device, "run.summary."
        peak = "no peak known: no MFU" if d.peak_tflops is None else \
            f"of {show(d.peak_tflops, 'g3', 'run.device.peak_tflops')} TFLOP/s {d.peak_dtype} " \
            f"({peak_provenance(d.peak_measurement) or d.peak_source})"
        unit, per_step = b.run.batch_unit, f"{show(s.tokens_per_step, 'int', at + 'tokens_per_step')} {b.run.batch_unit}/step"
        if b.study:  # one statistic in a study, the median step, as its report.md and terminal quote it
            r = b.study.speedup.runs if b.study.speedup else None
            rate = {"label": f"{unit}/s (median step)", "sub": per_step,
                    "value": show(r.base_tokens_per_s if r else None, "num0", "study.speedup.runs.base_tokens_per_s")}
            step = {"label": "median step", "value": show(s.step_time_median_s, "s", at + "step_time_median_s"),
                    "sub": f"of {s.measured_steps} measured steps"}
        else:
            rate = {"label": f"{unit}/s", "value": show(s.tokens_per_s, "num0", at + "tokens_per_s"), "sub": per_step}
            step = {"label": "step time", "value": show(s.step_time_s, "s", at + "step_time_s"),
                    "sub": f"mean of {s.measured_steps} steps; median "
                           f"{show(s.step_time_median_s, 's', at + 'step_time_median_s')}"}
        cards += [
            {"label": "MFU", "value": show(s.mfu, "pct_of_fraction", at + "mfu"), "sub": peak},
            {"label": "model TFLOPS", "value": show(s.tflops, "num3", at + "tflops"),
             "sub": f"{(s.flops_per_step or 0) / 1e9:,.1f} GFLOP/step, {d.peak_dtype}"},
            rate, step,
            {"label": "peak memory", "value": show(s.peak_memory_bytes, "bytes", at + "peak_memory_bytes"),
             "sub": s.peak_memory_kind},
        ]
    elif b.analysis and b.analysis.ranks:
        r, at = b.analysis.ranks[0], "analysis.ranks[0]"
        if or_default(r.steps, 0):  # a trace without steps has no step time to show
            cards.append({"label": "step time (trace)", "value": show(r.step_time_us, "us", at + ".step_time_us"),
                          "sub": f"median of {steps_shown(r.steps, r.steps_from, at + '.steps')}, rank {r.rank}"})
        if r.has_gpu:
            tb, f = r.temporal_breakdown, at + ".temporal_breakdown"
            cards.append({"label": "GPU busy computing", "value": show(tb.compute_pct, "pct_value", f + ".compute_pct"),
                          "sub": f"{LABELS['temporal']}: idle {show(tb.idle_pct, 'pct_value', f + '.idle_pct')}, "
                                 f"{LABELS['temporal.communication']} "
                                 f"{show(tb.communication_pct, 'pct_value', f + '.communication_pct')}"})
    if b.analysis and b.analysis.ranks and b.analysis.ranks[0].bottleneck:
        cards.append({"label": "principal bottleneck", "value": b.analysis.ranks[0].bottleneck,
                      "sub": "from the findings below"})
    if b.memory and not b.run:
        m = b.memory
        above = m.measured_above_baseline_bytes
        shown = above if above is not None else m.measured_peak_bytes
        cards.append({"label": "memory, measured" + (" above baseline" if above is not None else ""),
                      "value": show(shown, "bytes", "memory.measured_above_baseline_bytes" if above is not None
                                    else "memory.measured_peak_bytes"),
                      "sub": f"analytic {show(m.analytic_peak_bytes, 'bytes', 'memory.analytic_peak_bytes')}"})
        if m.max_micro_batch:
            cards.append({"label": "largest micro-batch", "value": str(m.max_micro_batch), "sub": "that fits"})
    final = b.study.speedup.final if b.study and b.study.speedup else None
    if final:  # a study: its one final figure (tokens/s at equal work), as report.md and the terminal say
        cards.append({"label": "speed-up (tokens/s)", "value": show(final.speedup, "x2", "study.speedup.final.speedup")
                      if final.speedup else "none claimed", "sub": {"verify pairs": "median of the verify pairs",
                                                   "runs": "two single runs, not paired"}.get(final.source,
                                                                                             "no knob kept")})
    elif b.tune:
        best = b.tune.best
        cards.append({"label": "tuned speed-up", "value": show(best.speedup, "x2", "tune.best.speedup")
                      if best.speedup is not None else "1.00×",
                      "sub": ", ".join(best.knobs)
                      or ("not confirmed by the verify pairs" if best.unconfirmed else "no knob kept")})
    if b.ettr and b.ettr.ettr is not None:
        cards.append({"label": "ETTR", "value": show(b.ettr.ettr, "pct_of_fraction", "ettr.ettr"),
                      "sub": "productive step time / wall time"})
    return cards


class _Charts(dict):
    """Chart id -> Vega-Lite spec, built in report/chart_registry.py's order; `add` returns the id
    the template puts on the chart's div."""

    def add(self, name: str, spec: dict | None) -> str | None:
        if spec is None:
            return None
        cid = f"chart-{name}"
        self[cid] = spec
        return cid


def _build(cs: _Charts, charts_: Iterable[Chart], built: dict[str, Any], build: Callable[[Chart], Any],
           name: Callable[[Chart], str]) -> None:
    """Build `charts_` into `cs`; `built` gets `chart_ids` (name -> id or None: the slots the template
    lays out around one chart) and `slots` (slot -> ids: the generic ones)."""
    for c in charts_:
        spec = build(c)
        cid = built["chart_ids"][c.name] = cs.add(name(c) if spec is not None else c.name, spec)
        if cid:
            built["slots"][c.slot].append(cid)


def _charts(b: Bundle, profiles: dict[str, tuple[str, Analysis | None]]) -> tuple[_Charts, dict, dict[str, dict]]:
    """Every registered chart the records allow, in the registry's order (each profile's charts
    at the place of the first profile chart): the specs, the page's ids and slots, and each
    profile's (`profiles`: prefix -> (record name, analysis))."""
    cs = _Charts()
    page: dict[str, Any] = {"chart_ids": {}, "slots": chart_registry.slots("page")}
    per: dict[str, dict] = {}
    cut = next(i for i, c in enumerate(chart_registry.CHARTS) if c.scope == "profile")
    on_page = [c for c in chart_registry.CHARTS if c.scope == "page"]

    def page_build(charts_: list[Chart]) -> None:
        _build(cs, charts_, page, lambda c: c.build(b), lambda c: c.key(b) if c.key else c.name)

    page_build([c for c in on_page if chart_registry.CHARTS.index(c) < cut])
    for prefix, (record, a) in profiles.items():
        if a and a.ranks:
            per[prefix] = {"chart_ids": {}, "slots": chart_registry.slots("profile")}
            _build(cs, (c for c in chart_registry.CHARTS if c.scope == "profile"), per[prefix],
                   lambda c, r=a.ranks[0], at=f"{record}.ranks[0]": c.build(r, at),
                   lambda c, p=prefix: f"{p}-{c.name}")
    page_build([c for c in on_page if chart_registry.CHARTS.index(c) > cut])
    return cs, page, per


def _script_json(obj: Any) -> str:
    """JSON safe inside <script>: < > & as \\u escapes (only strings hold them), so a name
    like "</script>" stays data."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@lru_cache(maxsize=1)
def vendor_js() -> str:
    """Vega, Vega-Lite and vega-embed (minified builds from npm, BSD-3-Clause, vendor/LICENSE.*)."""
    base = resources.files("trainprof.report") / "vendor"
    parts = [(base / name).read_text(encoding="utf-8") for name in VENDOR]
    assert not any("</script" in p.lower() for p in parts), "a vendored script would close its <script> block"
    return "\n".join(parts)


def render_html(b: Bundle) -> str:
    from trainprof.report.text import visible_bundle

    b = visible_bundle(b)  # trace-derived names: control characters shown, never sent
    run = b.run
    multi = b.analysis.multi_rank if b.analysis and b.analysis.multi_rank else None
    cs, page, per = _charts(b, {"profile": ("analysis", b.analysis), "optimised": ("optimised", b.optimised)})
    ctx = {
        "css": static_text("report.css"), "name": b.name, "files": b.files, "cards": _cards(b),
        "run": run,
        "step_split": step_split_table(run.summary) if run else None,
        **page,  # chart_ids: name -> id, slots: slot -> ids (report/chart_registry.py)
        "sv": system_view(run.system) if run else None,
        "profile": profile_view(b.analysis, "Profile", "analysis", per.get("profile")),
        "optimised": profile_view(b.optimised, "Optimised profile", "optimised", per.get("optimised")),
        "multi": multi, "rv": ranks_view(multi, run), "tune": b.tune,
        "memory_terms": view_memory.terms_table(b.memory) if b.memory else None,
        "memory_ladder": view_memory.ladder_table(b.memory) if b.memory else None,
        "ladder": ladder_table(b.tune) if b.tune else None, "memory": b.memory,
        "bench": b.bench, "bench_table": bench_table(b.bench) if b.bench else None,
        "bench_stop": (getattr(b.bench, "stop", None) or {}).get("reason") if b.bench else None,
        "diff": b.diff, "ettr": b.ettr, "unreadable": (b.analysis.unreadable or []) if b.analysis else [],
        **_diff_context(b), **_study_context(b), **_reference_context(b),
    }
    ctx["fv"] = findings_view(b.analysis, run, bool(run or ctx["profile"]))
    ctx["charts_json"] = _script_json(cs) if cs else None
    ctx["vendor_js"] = vendor_js() if cs else None
    ctx["page_js"] = static_text("report.js")
    return render("report.html.j2", **ctx)


def _reference_context(b: Bundle) -> dict[str, Any]:
    """The references beside the headline figures and the flowchart's path (report/context.py)."""
    from trainprof.report.context import chart, chart_field, reference_rows

    ettr = b.ettr.ettr if b.ettr and b.ettr.ettr is not None else None
    from trainprof.report.view_flowchart import flow_view

    return {"refs": reference_rows(b.run, ettr), "flow": flow_view(chart(b.analysis, b.run), chart_field(b.analysis, b.run))}


def _diff_context(b: Bundle) -> dict[str, Any]:
    """The before/after section compares what the traces hold (report/diff_text.py)."""
    if not b.diff:
        return {}
    from trainprof.report.study_text import speedup_claimed
    from trainprof.report.view_diff import diff_view

    unlike = b.study is not None and bool(b.study.speedup) and b.study.speedup.equal_tokens_per_step is False
    return {"dv": diff_view(b.diff), "diff_unlike": unlike, "diff_claimed": speedup_claimed(b.study)}


def _study_context(b: Bundle) -> dict[str, Any]:
    """A study folder's budget, stages and conclusions: the sentences report.md prints
    (report/view_study.py)."""
    if not b.study:
        return {"study": None}
    from trainprof.report.view_study import study_view

    sv = study_view(b.study, b.run.batch_unit if b.run else "tokens")
    return {"study": b.study, "study_notes": sv.notes, "study_spent": sv.spent, "study_speedup": sv.speedup,
            "study_accuracy": sv.accuracy}
