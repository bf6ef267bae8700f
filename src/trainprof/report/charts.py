"""Charts for report.html as Vega-Lite specs (plain dicts with their data inline).

The browser draws them (vendor/: Vega, Vega-Lite, vega-embed, inlined into the page), so the
page shows values on hover, zooms, and costs the writer nothing but building these dicts:
no matplotlib on the `analyze` path (it took ~0.5 s to import and ~0.8 s to draw the SVGs of
the 216k-event DDP trace's report, issue #16). Each function takes record fields and only
converts them to display units; text reaches the page as JSON data, which Vega renders as
text nodes, so a kernel name with < > & is never markup.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from msgspec import UNSET

from trainprof.recordtypes.analysis import IdleBreakdown, RankRow, RooflineHeader, StepRow, Temporal
from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.graph import PathStep
from trainprof.recordtypes.memory import Memory
from trainprof.recordtypes.run import RunRecord, StepRecord
from trainprof.recordtypes.tune import Trial
from trainprof.report.colours import CLASS_COLOURS, IDLE, KEPT, MEMORY, OTHER_CLASS, PATH_KINDS, TEMPORAL, phases_in
from trainprof.report.figures import LABELS, show

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"  # an identifier; never fetched
CONFIG = {"font": "system-ui, sans-serif", "view": {"stroke": None}, "axis": {"labelFontSize": 11},
          "legend": {"orient": "top", "labelFontSize": 11, "labelLimit": 480}}


def _spec(body: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"$schema": SCHEMA, "config": CONFIG, **top, **body}


def _colour(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    return {"domain": [k for k, _ in pairs], "range": [c for _, c in pairs]}


def _r(x: float, digits: int = 4) -> float:
    """Round for the page: 4 significant digits keep hover values exact to what a table shows
    and the embedded JSON small."""
    if x == 0 or not math.isfinite(x):
        return 0.0 if not math.isfinite(x) else x
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


def _stacked_steps(rows: list[dict[str, Any]], part: str, colours: list[tuple[str, str]], ytitle: str,
                   title: str, cap: float | None = None, tooltip: list[dict] | None = None) -> dict[str, Any]:
    """Stacked bars per step over a small overview strip: drag a range in the strip to zoom
    the bars into it (double-click resets). Stacks are computed here (`lo`, `hi` per row), so
    the chart is plain rects on a numeric step axis that an interval brush can zoom.
    cap: the y axis stops there (a slow warm-up step would flatten the rest); bars above are
    clipped and their totals stay in the tooltip."""
    tops: dict[Any, float] = {}
    for r in rows:
        lo = tops.get(r["step"], 0.0)
        r["lo"], r["hi"] = _r(lo), _r(lo + r["ms"])
        r["x0"], r["x1"] = r["step"] - 0.4, r["step"] + 0.4
        tops[r["step"]] = lo + r["ms"]
    x = {"field": "x0", "type": "quantitative", "axis": {"tickMinStep": 1, "format": "d"}}
    # the step axis runs over the steps (first − 0.4 to last + 0.4), not rounded out to −5
    span = [min((r["x0"] for r in rows), default=0), max((r["x1"] for r in rows), default=1)]
    y_scale: dict[str, Any] = {"domain": [0, _r(cap)]} if cap else {}
    colour = {"field": part, "type": "nominal", "scale": _colour(colours), "sort": [k for k, _ in colours]}
    detail = {"width": "container", "height": 220,
              "mark": {"type": "rect", "tooltip": True, "clip": True},
              "encoding": {"x": {**x, "title": "step", "scale": {"domain": {"param": "brush"}, "nice": False,
                                                                  "zero": False}}, "x2": {"field": "x1"},
                           "y": {"field": "lo", "type": "quantitative", "title": ytitle, "scale": y_scale},
                           "y2": {"field": "hi"}, "color": colour,
                           "tooltip": [{"field": "step"}, {"field": part}, {"field": "ms", "format": ",.2f"},
                                       *(tooltip or [])]}}
    if any("warm-up" in r for r in rows):
        detail["encoding"]["opacity"] = {"condition": {"test": "datum['warm-up']", "value": 0.35}, "value": 1}
    overview = {"width": "container", "height": 45, "mark": {"type": "rect", "color": "#999999"},
                "params": [{"name": "brush", "select": {"type": "interval", "encodings": ["x"]}}],
                "encoding": {"x": {**x, "title": None, "scale": {"domain": span, "nice": False, "zero": False}},
                             "x2": {"field": "x1"},
                             "y": {"field": "lo", "type": "quantitative", "axis": None}, "y2": {"field": "hi"}}}
    return _spec({"data": {"values": rows}, "vconcat": [detail, overview]}, title=title)


def step_split(steps: Sequence[StepRecord], warmup: int) -> dict[str, Any]:
    """Stacked bar per step: where each step's wall time went (ms); warm-up steps faded."""
    from trainprof.analysis.run.step_split import phases, seconds

    shown = phases_in(phases(*steps))
    rows = [{"step": s.step, "phase": label, "ms": _r(1e3 * seconds(s, key)), "warm-up": i < warmup}
            for i, s in enumerate(steps) for label, key, _ in shown]
    totals = [1e3 * sum(seconds(s, k) for _, k, _ in shown) for s in steps]
    measured = totals[warmup:] or totals
    cap = 1.5 * max(measured or [1.0])
    # As before on the static chart: cut the axis above the measured steps when a warm-up
    # step (compilation, allocator growth) is over twice as tall.
    cap_at = cap if max(totals or [0.0]) > 2 * cap / 1.5 and max(measured or [0.0]) > 0 else None
    return _stacked_steps(rows, "phase", [(p, c) for p, _, c in shown], "ms",
                          "Step time by phase" + (f" (first {warmup} faded: warm-up, left out of the summary)"
                                                  if warmup else "") + "; drag in the strip below to zoom",
                          cap=cap_at, tooltip=[{"field": "warm-up"}])


def training(runs: list[tuple[str, RunRecord]]) -> dict[str, Any] | None:
    """Loss (training per step, validation after the last step) and tokens/s per step, one
    colour per run (`runs`: [(label, run.json record)], e.g. baseline and optimised); warm-up
    steps faded. Values straight from run.json's steps and summary. The rate is labelled with
    the first run's unit (RunRecord.batch_unit: samples/s for a `profile` of a model fed features)."""
    rate = f"{runs[0][1].batch_unit}/s" if runs else "tokens/s"
    losses: list[dict[str, Any]] = []
    vals: list[dict[str, Any]] = []
    tps: list[dict[str, Any]] = []
    for label, run in runs:
        steps, warm = run.steps, run.summary.warmup_steps
        for i, st in enumerate(steps):
            if st.loss is not None:
                losses.append({"step": st.step, "series": f"{label} training", "loss": _r(st.loss, 5)})
            if st.step_time_s:
                tps.append({"step": st.step, "run": label, rate: _r(st.tokens / st.step_time_s),
                            "warm-up": i < warm})
        v = run.summary.val_loss
        if v is not None and steps:
            vals.append({"step": steps[-1].step, "series": f"{label} validation", "loss": _r(v, 5)})
    if not losses and not tps:
        return None
    x = {"field": "step", "type": "quantitative", "axis": {"tickMinStep": 1, "format": "d"}}
    loss = {"width": "container", "height": 180, "title": "Loss (training per step; validation after the last step)",
            "layer": [{"data": {"values": losses}, "mark": {"type": "line", "point": True, "tooltip": True},
                       "encoding": {"x": x, "y": {"field": "loss", "type": "quantitative", "scale": {"zero": False}},
                                    "color": {"field": "series", "type": "nominal", "title": None}}},
                      {"data": {"values": vals},
                       "mark": {"type": "point", "shape": "diamond", "size": 120, "filled": True, "tooltip": True},
                       "encoding": {"x": x, "y": {"field": "loss", "type": "quantitative"},
                                    "color": {"field": "series", "type": "nominal", "title": None}}}]}
    thr = {"width": "container", "height": 160, "title": f"{rate.capitalize()} per step (warm-up faded)",
           "data": {"values": tps}, "mark": {"type": "line", "point": True, "tooltip": True},
           "encoding": {"x": x, "y": {"field": rate, "type": "quantitative"},
                        "color": {"field": "run", "type": "nominal", "title": None},
                        "opacity": {"condition": {"test": "datum['warm-up']", "value": 0.35}, "value": 1}}}
    return _spec({"vconcat": [loss, thr]})


def _has(block: Any, field: str) -> bool:
    """The record holds `field` (null included), as `field in dict` said of the JSON."""
    return getattr(block, field, UNSET) is not UNSET


def trace_steps(per_step: list[StepRow]) -> dict[str, Any] | None:
    """The trace's profiler steps: device time per category, stacked (ms), zoomable."""
    if not per_step:
        return None
    rows = [{"step": s.step if _has(s, "step") else i, "category": LABELS.get(f"temporal.{name}", name),
             "ms": _r((getattr(s, f"{name}_us") or 0.0) / 1e3), "share %": _r(getattr(s, f"{name}_pct") or 0.0, 3)}
            for i, s in enumerate(per_step) for name, _ in TEMPORAL if _has(s, f"{name}_us")]
    return _stacked_steps(rows, "category", [(LABELS.get(f"temporal.{n}", n), c) for n, c in TEMPORAL], "ms of the step",
                          "Device time per profiler step; drag in the strip below to zoom",
                          tooltip=[{"field": "share %", "format": ".1f"}])


def _hbars(rows: list[dict[str, Any]], xlabel: str, colours: list[tuple[str, str]], x: str = "ms",
           tooltip_extra: list[dict] | None = None, rule_at: float | None = None,
           domain: list[float] | None = None) -> dict[str, Any]:
    """Horizontal bars with their value written at the end; `domain`: the x axis's range
    (the whole the bars are parts of), else 0 to the longest bar, never rounded out."""
    scale = {"domain": domain, "nice": False} if domain else {"nice": False, "zero": True}
    enc = {"y": {"field": "label", "type": "nominal", "sort": None, "title": None},
           "x": {"field": x, "type": "quantitative", "title": xlabel, "scale": scale},
           "color": {"field": "key", "type": "nominal", "scale": _colour(colours), "legend": None},
           "tooltip": [{"field": "label", "title": "what"}, {"field": x, "format": ",.3f"}, *(tooltip_extra or [])]}
    layers: list[dict[str, Any]] = [
        {"mark": {"type": "bar", "tooltip": True, "stroke": "#666666", "strokeWidth": 0.4}, "encoding": enc},
        {"mark": {"type": "text", "align": "left", "dx": 3, "fontSize": 10},
         "encoding": {"y": enc["y"], "x": enc["x"], "text": {"field": "text"}}},
    ]
    if rule_at is not None:
        layers.append({"mark": {"type": "rule", "strokeDash": [4, 3], "color": "#444444"},
                       "encoding": {"x": {"datum": rule_at, "type": "quantitative"}}})
    return _spec({"data": {"values": rows}, "layer": layers}, width="container", height=28 * len(rows) + 20)


def temporal(tb: Temporal, at: str = "analysis.ranks[0]") -> dict[str, Any]:
    """Device timeline split (HTA's temporal breakdown): ms and share of the span; the axis
    runs to the span, so each bar reads as its share of it."""
    at += ".temporal_breakdown"
    rows = [{"key": n, "label": LABELS.get(f"temporal.{n}", n), "ms": _r(getattr(tb, f"{n}_us") / 1e3),
             "share %": _r(or_default(getattr(tb, f"{n}_pct"), 0.0), 3),
             "text": f"{show(getattr(tb, f'{n}_us'), 'us', f'{at}.{n}_us')} "
                     f"({show(getattr(tb, f'{n}_pct'), 'pct_value', f'{at}.{n}_pct')})"}
            for n, _ in TEMPORAL if _has(tb, f"{n}_us")]
    return _hbars(rows, "ms of GPU time in HTA's window (the axis: its span)",
                  [(k, c) for k, c in TEMPORAL], tooltip_extra=[{"field": "share %", "format": ".1f"}],
                  domain=[0, _r(or_default(tb.span_us, 0.0) / 1e3)] if or_default(tb.span_us, 0.0) else None)


def idle(ib: IdleBreakdown, at: str = "analysis.ranks[0]") -> dict[str, Any]:
    """Idle time by cause (HTA's window, analysis/timeline/idle.py), the causes that took any; the axis runs to the total
    idle time, so each bar reads as its share of it."""
    at += ".idle_breakdown"
    rows = [{"key": k, "label": label, "ms": _r(getattr(ib, f"{k}_us") / 1e3),
             "text": show(getattr(ib, f"{k}_us"), "us", f"{at}.{k}_us")
                     + (f" ({show(getattr(ib, f'{k}_pct'), 'pct_value', f'{at}.{k}_pct')})" if _has(ib, f"{k}_pct") else "")}
            for k, label, _ in IDLE if _has(ib, f"{k}_us") and getattr(ib, f"{k}_us") > 0]
    return _hbars(rows, "ms the GPU sat idle, by cause (the axis: all idle time)", [(k, c) for k, _, c in IDLE],
                  domain=[0, _r(ib.idle_us / 1e3)] if ib.idle_us else None)


def ladder(trials: list[Trial], kept: list[str] | None = None) -> dict[str, Any] | None:
    """Each knob's tokens/s relative to the baseline; kept knobs (in the final configuration,
    `best.knobs`) green."""
    keep = set(kept if kept is not None else [r.knob for r in trials if r.accepted])
    rows = [{"key": "kept" if r.knob in keep else "not kept", "label": str(r.knob),
             "speed-up": _r(r.speedup), "text": f"{r.speedup:.2f}×" + (" kept" if r.knob in keep else "")}
            for r in trials if not r.skipped and r.speedup]
    if not rows:
        return None
    return _hbars(rows, "tokens/s relative to the baseline (1.0 = baseline; green = kept)",
                  list(KEPT), x="speed-up", rule_at=1.0)


def memory(mem: Memory) -> dict[str, Any] | None:
    """Analytic terms stacked in one bar, beside the measured peak (MiB)."""
    rows = [{"row": "main analytic terms", "term": label, "MiB": _r(getattr(mem, k) / 2**20)}
            for k, label, _ in MEMORY if isinstance(getattr(mem, k), (int, float))]
    measured = [(label, getattr(mem, k)) for k, label in (
        ("analytic_peak_bytes", "analytic peak"), ("measured_above_baseline_bytes", "measured above baseline"),
        ("measured_peak_bytes", "measured peak, whole process")) if isinstance(getattr(mem, k), (int, float))]
    rows += [{"row": label, "term": label, "MiB": _r(v / 2**20)} for label, v in measured]
    if not rows:
        return None
    colours = [(label, c) for _, label, c in MEMORY] + [
        (label, "#999999" if label.startswith("analytic") else "#444444") for label, _ in measured]
    enc = {"y": {"field": "row", "type": "nominal", "sort": None, "title": None},
           "x": {"field": "MiB", "type": "quantitative", "stack": True, "title": "MiB"},
           "color": {"field": "term", "type": "nominal", "scale": _colour(colours)},
           "tooltip": [{"field": "row"}, {"field": "term"}, {"field": "MiB", "format": ",.1f"}]}
    return _spec({"data": {"values": rows}, "mark": {"type": "bar", "tooltip": True}, "encoding": enc},
                 width="container", height=32 * (1 + len(measured)) + 20)


def bench(kind: str, results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """`bench batch`: tokens/s per micro-batch (log₂ axis); `bench scaling`: the job's tokens/s per
    rank count beside the ideal, N × one rank's (the gap is 1 − efficiency). Other kinds: None."""
    if kind == "batch":
        rows = [{"x": r["micro_batch"], "tokens/s": _r(r["tokens_per_s"]), "series": "measured",
                 "step ms": _r(r["step_time_s"] * 1e3)} for r in results if r.get("tokens_per_s")]
        x = {"field": "x", "type": "quantitative", "title": "micro-batch (sequences)", "scale": {"type": "log", "base": 2}}
    elif kind == "scaling":
        one = next((r["job_tokens_per_s"] for r in results if r["nproc"] == 1), None)
        rows = [{"x": r["nproc"], "tokens/s": _r(r["job_tokens_per_s"]), "series": "measured",
                 "efficiency": _r(r["efficiency"]) if r.get("efficiency") is not None else None} for r in results]
        rows += [{"x": r["nproc"], "tokens/s": _r(r["nproc"] * one), "series": "ideal (N × one rank)"}
                 for r in results if one]
        x = {"field": "x", "type": "quantitative", "title": "ranks", "axis": {"tickMinStep": 1}}
    else:
        return None
    if not rows:
        return None
    enc = {"x": x, "y": {"field": "tokens/s", "type": "quantitative", "title": "tokens/s"},
           "color": {"field": "series", "type": "nominal", "title": None,
                     "scale": _colour([("measured", "#1f77b4"), ("ideal (N × one rank)", "#999999")])},
           "strokeDash": {"field": "series", "type": "nominal", "legend": None},
           "tooltip": [{"field": k} for k in rows[0] if k != "series"]}
    return _spec({"data": {"values": rows}, "mark": {"type": "line", "point": True, "tooltip": True},
                  "encoding": enc}, width="container", height=220)


def ranks(per_rank: list[RankRow], per_step: bool = True) -> dict[str, Any]:
    """Per-rank compute / communication / idle per step (µs → ms), stacked; `per_step` False:
    the ranks have no steps and each bar is a whole trace."""
    kinds = (("compute_us", "compute", "#1f77b4"), ("communication_us", "communication", "#000000"),
             ("idle_us", "idle", "#cccccc"))
    rows = [{"rank": r.rank, "part": label, "ms": _r((getattr(r, key) or 0.0) / 1e3)}
            for r in per_rank for key, label, _ in kinds]
    enc = {"x": {"field": "rank", "type": "ordinal"},
           "y": {"field": "ms", "type": "quantitative", "stack": True,
                 "title": "ms per step" if per_step else "ms (whole trace: no steps)"},
           "color": {"field": "part", "type": "nominal", "scale": _colour([(lb, c) for _, lb, c in kinds]),
                     "sort": [lb for _, lb, _ in kinds]},
           "tooltip": [{"field": "rank"}, {"field": "part"}, {"field": "ms", "format": ",.2f"}]}
    return _spec({"data": {"values": rows}, "mark": {"type": "bar", "tooltip": True}, "encoding": enc},
                 width="container", height=220)


def _labels(names: list[str], width: int = 22) -> list[str]:
    """Point labels: the op without its namespace, shortened as a set (report/names.py)."""
    from trainprof.report.names import short_names

    return short_names([n.replace("aten::", "").replace("_scaled_dot_product_", "sdpa_") for n in names], width)


ROOF_W, ROOF_H = 760, 360  # px of the roofline's plot area: fixed, so labels are placed before drawing
ROOF_FONT = 10  # px, the point labels
ROOF_LABELS = 10  # the biggest points that may carry a label; the rest: tooltip and table row


def _log_pos(v: float, lo: float, hi: float, size: float) -> float:
    return size * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))


def _log_val(pos: float, lo: float, hi: float, size: float) -> float:
    return 10 ** (math.log10(lo) + pos / size * (math.log10(hi) - math.log10(lo)))


def _roofs(header: RooflineHeader, used: set, lo: float, hi: float) -> list[dict[str, Any]]:
    """The roof lines (one per dtype the points use), sampled on the log x axis."""
    bw = or_default(header.peak_bandwidth_gbs, None)
    if not bw:
        return []
    roofs = []
    peaks = or_default(header.peaks_by_dtype, None) or {}
    for dt, peak in sorted((d, v) for d, v in peaks.items() if d in used and v):
        ridge = peak * 1e3 / bw  # FLOP/B where the memory roof meets the compute roof
        for x in sorted({lo, hi, ridge} | {lo * (hi / lo) ** (i / 24) for i in range(25)}):
            roofs.append({"roof": f"{dt}: {peak:.3g} TFLOP/s, {bw:.3g} GB/s", "FLOP/B": _r(x),
                          "TFLOP/s": _r(min(peak, x * bw / 1e3))})
    return roofs


def roofline(header: RooflineHeader, points: list[dict[str, Any]], title: str) -> dict[str, Any]:
    """Log-log roofline: one roof per dtype the points use, the points sized by device time,
    hover for op, arithmetic intensity and TFLOP/s; scroll to zoom, drag to pan. Axes run
    over the data (no rounding out), and the biggest points carry a label placed where it
    meets no other (report/placement.py); the others have their tooltip and table row."""
    from trainprof.report.placement import place

    pts = [p for p in points if (p.get("intensity") or 0) > 0 and (p.get("achieved_tflops") or 0) > 0]
    xs = [p["intensity"] for p in pts] or [1.0]
    lo = min(min(xs) / 4, 0.05)
    hi = max(max(xs) * 4, (or_default(header.ridge_flop_per_byte, None) or 10) * 8)
    used = {p.get("dtype") for p in points if p.get("dtype")} or {or_default(header.dtype, None)}
    roofs = _roofs(header, used, lo, hi)
    ys = [p["achieved_tflops"] for p in pts] + [r["TFLOP/s"] for r in roofs]
    ylo, yhi = (min(ys) / 3, max(ys) * 3) if ys else (1e-3, 1.0)
    big = max((p.get("device_time_us") or 0.0 for p in pts), default=1.0) or 1.0
    sizes = [40 + 260 * (p.get("device_time_us") or 0.0) / big for p in pts]  # marker area, px²
    names = _labels([str(p.get("name")) for p in pts])
    texts = [f"{i} {n}" for i, n in enumerate(names, 1)]
    # label the biggest first: placement order by device time, ties by table order
    order = sorted(range(len(pts)), key=lambda i: (-(pts[i].get("device_time_us") or 0.0), i))
    xy = [(_log_pos(pts[i]["intensity"], lo, hi, ROOF_W), ROOF_H - _log_pos(pts[i]["achieved_tflops"], ylo, yhi, ROOF_H),
           math.sqrt(sizes[i] / math.pi)) for i in order]
    boxes = dict(zip(order, place(xy, [texts[i] for i in order], ROOF_W, ROOF_H, ROOF_FONT, ROOF_LABELS)))
    labels = [{"label": texts[i], "lx": _r(_log_val(b.x0, lo, hi, ROOF_W), 6),
               "ly": _r(_log_val(ROOF_H - (b.y0 + b.y1) / 2, ylo, yhi, ROOF_H), 6)}
              for i, b in sorted(boxes.items()) if b is not None]
    dots = [{"#": i, "op": str(p.get("name")), "class": p.get("class") or "other", "dtype": p.get("dtype"),
             "AI (FLOP/B)": _r(p["intensity"]), "TFLOP/s": _r(p["achieved_tflops"]),
             "of roof %": _r(p.get("roofline_pct") or 0.0, 3), "bound": p.get("bound") or "?",
             "time ms": _r((p.get("device_time_us") or 0.0) / 1e3), "size": _r(size)}
            for i, (p, size) in enumerate(zip(pts, sizes), 1)]
    log_x = {"type": "log", "domain": [_r(lo), _r(hi)], "nice": False}
    log_y = {"type": "log", "domain": [_r(ylo), _r(yhi)], "nice": False}
    x_title = "arithmetic intensity (FLOP / byte, minimum traffic)"
    layers: list[dict[str, Any]] = []
    if roofs:
        layers.append({"data": {"values": roofs}, "mark": {"type": "line", "color": "#444444", "tooltip": True,
                                                           "clip": True},
                       "encoding": {"x": {"field": "FLOP/B", "type": "quantitative", "scale": log_x, "title": x_title},
                                    "y": {"field": "TFLOP/s", "type": "quantitative", "scale": log_y,
                                          "title": "achieved TFLOP/s"},
                                    "strokeDash": {"field": "roof", "type": "nominal", "title": "roof"},
                                    "tooltip": [{"field": "roof"}, {"field": "FLOP/B", "format": ".3g"},
                                                {"field": "TFLOP/s", "format": ".3g"}]}})
    classes = sorted({d["class"] for d in dots})
    point_enc = {"x": {"field": "AI (FLOP/B)", "type": "quantitative", "scale": log_x, "title": x_title},
                 "y": {"field": "TFLOP/s", "type": "quantitative", "scale": log_y, "title": "achieved TFLOP/s"}}
    layers.append({"data": {"values": dots},
                   "params": [{"name": "zoom", "select": "interval", "bind": "scales"}],
                   "mark": {"type": "point", "filled": True, "stroke": "black", "strokeWidth": 0.5,
                            "opacity": 0.9, "tooltip": True, "clip": True},
                   "encoding": {**point_enc, "size": {"field": "size", "type": "quantitative", "legend": None,
                                                      "scale": None},
                                "color": {"field": "class", "type": "nominal",
                                          "scale": _colour([(c, CLASS_COLOURS.get(c, OTHER_CLASS)) for c in classes])},
                                "tooltip": [{"field": "#"}, {"field": "op"}, {"field": "class"}, {"field": "dtype"},
                                            {"field": "AI (FLOP/B)", "format": ".3g"},
                                            {"field": "TFLOP/s", "format": ".3g"},
                                            {"field": "of roof %", "format": ".0f"}, {"field": "bound"},
                                            {"field": "time ms", "format": ",.2f"}]}})
    if labels:
        layers.append({"data": {"values": labels},
                       "mark": {"type": "text", "align": "left", "baseline": "middle", "fontSize": ROOF_FONT,
                                "clip": True},
                       "encoding": {"x": {"field": "lx", "type": "quantitative", "scale": log_x, "title": x_title},
                                    "y": {"field": "ly", "type": "quantitative", "scale": log_y,
                                          "title": "achieved TFLOP/s"},
                                    "text": {"field": "label"}}})
    return _spec({"layer": layers, "resolve": {"legend": {"strokeDash": "independent"}}},
                 title=title, width=ROOF_W, height=ROOF_H)


def system(samples: list[dict[str, Any]], window: tuple[float, float] | None = None) -> dict[str, Any] | None:
    """Utilisation over the run (CPU and each GPU, %) and GPU power (W) or process RSS (GiB);
    the measured steps' window shaded; brush the strip below to zoom into a time range."""
    if len(samples) < 2:
        return None
    from trainprof.analysis.run.system import gpu_series

    gpus = gpu_series(samples)
    power = any("power_w" in r for rows in gpus.values() for r in rows)
    rows = [{"t_s": _r(s["t_s"], 6), "series": "CPU (all cores)", "panel": "util",
             "value": _r(s.get("cpu_util_pct") or 0.0, 3)} for s in samples[1:]]  # 1st CPU reading: no interval
    for i, rs in sorted(gpus.items()):
        rows += [{"t_s": _r(r["t_s"], 6), "series": f"GPU {i}", "panel": "util", "value": _r(r["util_pct"], 3)}
                 for r in rs if "util_pct" in r]
        if power:
            rows += [{"t_s": _r(r["t_s"], 6), "series": f"GPU {i}", "panel": "lower", "value": _r(r["power_w"], 4)}
                     for r in rs if "power_w" in r]
    if not power:
        rows += [{"t_s": _r(s["t_s"], 6), "series": "process RSS", "panel": "lower",
                  "value": _r((s.get("rss_bytes") or 0) / 2**30, 4)} for s in samples]
    x = {"field": "t_s", "type": "quantitative",
         "title": "seconds since the first step" + ("; shaded: the measured steps" if window else "")}

    def panel(name: str, ytitle: str, domain: list | None) -> dict[str, Any]:
        y = {"field": "value", "type": "quantitative", "title": ytitle, **({"scale": {"domain": domain}} if domain else {})}
        zx = {**x, "scale": {"domain": {"param": "brush"}}}  # the strip's brush sets this panel's range
        layers: list[dict[str, Any]] = []
        if window:
            layers.append({"data": {"values": [{"a": window[0], "b": window[1]}]},
                           "mark": {"type": "rect", "color": "#2ca02c", "opacity": 0.08, "clip": True},
                           "encoding": {"x": {**zx, "field": "a"}, "x2": {"field": "b"}}})
        layers.append({"transform": [{"filter": f"datum.panel == '{name}'"}],
                       "mark": {"type": "line", "tooltip": True, "point": len(samples) < 60, "clip": True},
                       "encoding": {"x": zx, "y": y, "color": {"field": "series", "type": "nominal", "title": None},
                                    "tooltip": [{"field": "series"}, {"field": "t_s", "format": ".2f"},
                                                {"field": "value", "format": ",.3g", "title": ytitle}]}})
        return {"width": "container", "height": 150, "layer": layers}

    spec = {"data": {"values": rows},
            "vconcat": [panel("util", "utilisation %", [0, 105]),
                        panel("lower", "power W" if power else "process RSS GiB", None),
                        {"width": "container", "height": 40, "transform": [{"filter": "datum.panel == 'util'"}],
                         "params": [{"name": "brush", "select": {"type": "interval", "encodings": ["x"]}}],
                         "mark": {"type": "line", "color": "#999999"},
                         "encoding": {"x": {**x, "title": None}, "y": {"field": "value", "aggregate": "max",
                                                                     "type": "quantitative", "axis": None},
                                      "detail": {"field": "series"}}}],
            "resolve": {"scale": {"color": "shared"}}}
    return _spec(spec, title="System over the run (drag in the strip below to zoom)")


def critical_path(steps: list[PathStep], max_steps: int = 8) -> dict[str, Any] | None:
    """One lane per step along its time (ms from the step's start): each critical-path
    segment a rect coloured by kind, its name and duration on hover; drag to zoom."""
    steps = [s for s in steps if s.segments][:max_steps]
    if not steps:
        return None
    rows = []
    for s in steps:
        t0 = s.segments[0].start_us
        lane = "trace" if s.step < 0 else f"step {s.step}"
        for seg in s.segments:
            a = (seg.start_us - t0) / 1e3
            rows.append({"step": lane, "kind": seg.kind, "name": seg.name, "class": or_default(seg.kernel_class, ""),
                         "a": _r(a, 7), "b": _r(a + seg.dur_us / 1e3, 7), "ms": _r(seg.dur_us / 1e3)})
    lanes = list(dict.fromkeys(r["step"] for r in rows))
    return _spec({
        "data": {"values": rows}, "width": "container", "height": max(60, 26 * len(lanes)),
        "params": [{"name": "zoom", "select": {"type": "interval", "encodings": ["x"]}, "bind": "scales"}],
        "mark": {"type": "rect", "tooltip": True},
        "encoding": {"y": {"field": "step", "type": "nominal", "sort": lanes, "title": None,
                           "axis": {"labelOverlap": "greedy"}},
                     "x": {"field": "a", "type": "quantitative", "title": "ms from the step's start",
                           "scale": {"domain": [0, _r(max(r["b"] for r in rows), 7)], "nice": False},
                           "axis": {"labelOverlap": "greedy", "labelFlush": True}},
                     "x2": {"field": "b"},
                     "color": {"field": "kind", "type": "nominal", "scale": _colour(list(PATH_KINDS)),
                               "title": "on the critical path"},
                     "tooltip": [{"field": "step"}, {"field": "kind"}, {"field": "class"}, {"field": "name"},
                                 {"field": "ms", "format": ",.3f"}]}},
        title="Critical path per step, coloured by kind (scroll to zoom, drag to pan)")


def modules(table: Any, at: str = "analysis.ranks[0].modules", max_rows: int = 10) -> dict[str, Any] | None:
    """Self time per module type (analysis/cost/modules.py), the rows the table ranks; the
    axis runs to the table's total self time, so each bar reads as its share."""
    rows = [{"key": "self", "label": r.module, "ms": _r(r.self_us / 1e3),
             "text": show(r.self_us, "us", f"{at}.rows[{i}].self_us") + f" ({show(r.share_pct, 'pct_value', f'{at}.rows[{i}].share_pct')})"}
            for i, r in enumerate(table.rows[:max_rows])] if table else []
    if not rows:
        return None
    return _hbars(rows, "ms per step outside child modules (forward + backward; the axis: all modules)",
                  [("self", "#4c78a8")], domain=[0, _r(table.total_self_us / 1e3)] if table.total_self_us else None)
