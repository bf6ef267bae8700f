"""Charts for report.html as inline SVG strings (matplotlib, Agg; no file, no network).

Each function takes record fields and draws them; values are only converted to display
units. Text stays text in the SVG (svg.fonttype none: small, selectable) and matplotlib
escapes it, so a kernel name with < > & cannot break the page. Names from records go
through `_plain` first: a `$` in a kernel or knob name is a character, not mathtext.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PHASES = (("data", "data_s", "#9467bd"), ("h2d", "h2d_s", "#17becf"), ("forward", "forward_s", "#1f77b4"),
          ("backward", "backward_s", "#ff7f0e"), ("optimizer", "optimizer_s", "#2ca02c"),
          ("other", "other_s", "#bbbbbb"))
TEMPORAL = (("compute", "#1f77b4"), ("communication", "#000000"), ("memcpy", "#7f7f7f"),
            ("memset", "#bcbd22"), ("sync", "#d62728"), ("idle", "#dddddd"))
IDLE = (("data_loading", "data loading", "#9467bd"), ("host_sync", "host sync", "#d62728"),
        ("host_launch", "host launching kernels", "#ff7f0e"), ("other", "other", "#bbbbbb"),
        ("unattributed", "unattributed", "#dddddd"))
MEMORY = (("params_bytes", "weights", "#1f77b4"), ("grads_bytes", "gradients", "#ff7f0e"),
          ("optimizer_bytes", "optimizer states", "#2ca02c"), ("activations_bytes", "activations", "#9467bd"),
          ("logits_bytes", "logits", "#8c564b"))


@contextmanager
def _style(salt: str) -> Iterator[None]:
    import matplotlib

    matplotlib.use("Agg")
    # hashsalt: ids inside each SVG are derived from it, so several inline SVGs in one page
    # never share an id, and the output is the same on every run.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt, "font.size": 9,
                                "axes.spines.top": False, "axes.spines.right": False}):
        yield


def _plain(text: object) -> str:
    return str(text).replace("$", r"\$")


def _figure(w: float, h: float):  # noqa: ANN202
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), dpi=100, layout="constrained")


def _svg(fig) -> str:  # noqa: ANN001
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    return text[text.index("<svg"):].strip()


def step_split(steps: list[dict[str, Any]], warmup: int) -> str:
    """Stacked bar per step: where each step's wall time went (ms); warm-up steps faded."""
    with _style("step_split"):
        fig = _figure(10, 3.4)
        ax = fig.add_subplot()
        xs = list(range(len(steps)))
        bottom = [0.0] * len(steps)
        alpha = [0.35 if i < warmup else 1.0 for i in xs]
        for label, key, colour in PHASES:
            vals = [1e3 * (s.get(key) or 0.0) for s in steps]
            bars = ax.bar(xs, vals, bottom=bottom, color=colour, label=label, width=0.8 if len(xs) < 80 else 1.0)
            for b, a in zip(bars, alpha):
                b.set_alpha(a)
            bottom = [b + v for b, v in zip(bottom, vals)]
        # A slow warm-up step (compilation, allocator growth) would flatten the measured ones:
        # cut the axis above the measured steps and write the clipped totals on their bars.
        measured = bottom[warmup:] or bottom
        cap = 1.5 * max(measured or [1.0])
        if max(bottom or [0.0]) > 2 * cap / 1.5 and max(measured or [0.0]) > 0:
            ax.set_ylim(0, cap)
            for x, total in zip(xs, bottom):
                if total > cap:
                    ax.text(x, cap * 0.97, f"{total:,.0f} ms ↑", ha="center", va="top", fontsize=8,
                            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
        ax.set_xlabel("step" + (f" (first {warmup} faded: warm-up, left out of the summary)" if warmup else ""))
        ax.set_ylabel("ms")
        if len(xs) <= 40:
            ax.set_xticks(xs, [str(s.get("step", i)) for i, s in zip(xs, steps)])
        from matplotlib.patches import Patch

        # Proxies: the bars' own handles would carry the first (faded warm-up) bar's alpha.
        ax.legend(handles=[Patch(color=c, label=label) for label, _, c in PHASES], ncols=6, fontsize=8,
                  loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
        return _svg(fig)


def _hbars(labels: list[str], values: list[float], colours: list[str], texts: list[str], xlabel: str,
           salt: str, width: float = 7.0) -> str:
    with _style(salt):
        fig = _figure(width, 0.42 * len(labels) + 0.9)
        ax = fig.add_subplot()
        ys = list(range(len(labels)))[::-1]
        ax.barh(ys, values, color=colours, edgecolor="#666666", linewidth=0.4)
        ax.set_yticks(ys, [_plain(x) for x in labels])
        top = max(values or [1.0]) or 1.0
        for y, v, t in zip(ys, values, texts):
            ax.text(v + top * 0.01, y, t, va="center", fontsize=8)
        ax.set_xlim(0, top * 1.35)
        ax.set_xlabel(xlabel)
        return _svg(fig)


def temporal(tb: dict[str, Any]) -> str:
    """Device timeline split (HTA's temporal breakdown): ms and share of the span."""
    rows = [(name, colour) for name, colour in TEMPORAL if f"{name}_us" in tb]
    return _hbars([n for n, _ in rows], [tb[f"{n}_us"] / 1e3 for n, _ in rows], [c for _, c in rows],
                  [f"{tb[f'{n}_us'] / 1e3:,.1f} ms ({tb.get(f'{n}_pct') or 0:.1f}%)" for n, _ in rows],
                  "ms of device time over the analysed steps", "temporal", width=5.2)


def idle(ib: dict[str, Any]) -> str:
    rows = [(k, label, c) for k, label, c in IDLE if f"{k}_us" in ib]
    return _hbars([label for _, label, _ in rows], [ib[f"{k}_us"] / 1e3 for k, _, _ in rows],
                  [c for _, _, c in rows],
                  [f"{ib[f'{k}_us'] / 1e3:,.1f} ms" + (f" ({ib[f'{k}_pct']:.0f}%)" if f"{k}_pct" in ib else "")
                   for k, _, _ in rows], "ms the device sat idle, by cause", "idle", width=5.2)


def ladder(trials: list[dict[str, Any]]) -> str | None:
    """Each knob's tokens/s relative to the baseline; kept knobs green (tune.png's chart)."""
    rows = [r for r in trials if not r.get("skipped") and r.get("speedup")]
    if not rows:
        return None
    return _hbars([r["knob"] for r in rows], [r["speedup"] for r in rows],
                  ["#2ca02c" if r.get("accepted") else "#cccccc" for r in rows],
                  [f"{r['speedup']:.2f}×" + (" kept" if r.get("accepted") else "") for r in rows],
                  "tokens/s relative to the baseline (1.0 = baseline; green = kept)", "ladder")


def memory(mem: dict[str, Any]) -> str | None:
    """Analytic terms stacked in one bar, beside the measured peak (MiB)."""
    parts = [(label, mem[k] / 2**20, c) for k, label, c in MEMORY if isinstance(mem.get(k), (int, float))]
    measured = [(label, mem[k] / 2**20) for k, label in (
        ("analytic_peak_bytes", "analytic peak"), ("measured_above_baseline_bytes", "measured above baseline"),
        ("measured_peak_bytes", "measured peak, whole process")) if isinstance(mem.get(k), (int, float))]
    if not parts and not measured:
        return None
    with _style("memory"):
        fig = _figure(8, 0.55 * (1 + len(measured)) + 1.2)
        ax = fig.add_subplot()
        labels = (["main analytic terms"] if parts else []) + [m for m, _ in measured]
        ys = list(range(len(labels)))[::-1]
        left = 0.0
        for label, v, c in parts:
            ax.barh(ys[0], v, left=left, color=c, label=label, edgecolor="white", linewidth=0.5)
            left += v
        for y, (label, v) in zip(ys[1 if parts else 0:], measured):
            ax.barh(y, v, color="#999999" if label.startswith("analytic") else "#444444")
            ax.text(v, y, f" {v:,.1f} MiB", va="center", fontsize=8)
        if parts:
            ax.text(left, ys[0], f" {left:,.1f} MiB", va="center", fontsize=8)
            ax.legend(ncols=5, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
        ax.set_yticks(ys, labels)
        ax.set_xlim(0, max([left] + [v for _, v in measured]) * 1.25 or 1.0)
        ax.set_xlabel("MiB")
        return _svg(fig)


def ranks(per_rank: list[dict[str, Any]]) -> str:
    """Per-rank compute / communication / idle per step (µs → ms), stacked."""
    with _style("ranks"):
        fig = _figure(min(10.0, 3.0 + 0.5 * len(per_rank)), 3.2)
        ax = fig.add_subplot()
        xs = list(range(len(per_rank)))
        bottom = [0.0] * len(xs)
        for key, label, colour in (("compute_us", "compute", "#1f77b4"),
                                   ("communication_us", "communication", "#000000"),
                                   ("idle_us", "idle", "#cccccc")):
            vals = [(r.get(key) or 0.0) / 1e3 for r in per_rank]
            ax.bar(xs, vals, bottom=bottom, color=colour, label=label, width=0.8 if len(xs) < 80 else 1.0)
            bottom = [b + v for b, v in zip(bottom, vals)]
        if len(xs) <= 40:
            ax.set_xticks(xs, [str(r.get("rank")) for r in per_rank])
        ax.set_xlabel("rank")
        ax.set_ylabel("ms per step")
        ax.legend(ncols=3, fontsize=8, frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0))
        return _svg(fig)


def roofline(header: dict[str, Any], points: list[dict[str, Any]], title: str) -> str:
    """plots.roofline_figure (the chart `analyze` saves as roofline.png) as inline SVG."""
    import matplotlib.pyplot as plt

    from trainprof.report.plots import roofline_figure

    with _style("roofline"):
        fig = roofline_figure(header, [{**p, "name": _plain(p.get("name"))} for p in points], _plain(title))
        try:
            return _svg(fig)
        finally:
            plt.close(fig)


def system(samples: list[dict[str, Any]], window: tuple[float, float] | None = None) -> str | None:
    """Utilisation over the run (CPU and each GPU, %), and GPU power (W) or process RSS (GiB)
    below it; the measured steps' window shaded."""
    if len(samples) < 2:
        return None
    from trainprof.analysis.system import gpu_series

    gpus = gpu_series(samples)
    power = {i: rows for i, rows in gpus.items() if any("power_w" in r for r in rows)}
    with _style("system"):
        fig = _figure(10, 4.2)
        top, bottom = fig.subplots(2, 1, sharex=True)
        ts = [s["t_s"] for s in samples[1:]]  # the first CPU reading covers no interval
        top.plot(ts, [s.get("cpu_util_pct") for s in samples[1:]], color="#7f7f7f", label="CPU (all cores)")
        for i, rows in sorted(gpus.items()):
            if any("util_pct" in r for r in rows):
                top.plot([r["t_s"] for r in rows], [r.get("util_pct") for r in rows], label=f"GPU {i}")
        top.set_ylim(0, 105)
        top.set_ylabel("utilisation %")
        top.legend(ncols=6, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
        if power:
            for i, rows in sorted(power.items()):
                bottom.plot([r["t_s"] for r in rows], [r.get("power_w") for r in rows], label=f"GPU {i}")
            bottom.set_ylabel("power W")
        else:
            bottom.plot([s["t_s"] for s in samples], [(s.get("rss_bytes") or 0) / 2**30 for s in samples],
                        color="#1f77b4")
            bottom.set_ylabel("process RSS GiB")
        bottom.set_ylim(bottom=0)
        bottom.set_xlabel("seconds since the first step" + ("; shaded: the measured steps" if window else ""))
        if window:
            for ax in (top, bottom):
                ax.axvspan(window[0], window[1], color="#2ca02c", alpha=0.08, linewidth=0)
        return _svg(fig)


# critical-path kinds (analysis/depgraph.py SEG_KINDS), same colours as the terminal
PATH_KINDS = (("cpu_op", "CPU op", "#4C78A8"), ("kernel", "kernel", "#54A24B"),
              ("launch_overhead", "launch overhead", "#F58518"), ("sync_wait", "sync wait", "#E45756"),
              ("communication", "communication", "#B279A2"), ("data_loading", "data loading", "#EECA3B"),
              ("idle", "idle / wait", "#BAB0AC"))


def critical_path(steps: list[dict[str, Any]], max_steps: int = 6) -> str | None:
    """One bar per step along its time (ms from the step's start): each critical-path segment
    coloured by kind."""
    steps = [s for s in steps if s.get("segments")][:max_steps]
    if not steps:
        return None
    colour = {k: c for k, _, c in PATH_KINDS}
    with _style("critical_path"):
        fig = _figure(7.0, 0.38 * len(steps) + 1.1)
        ax = fig.add_subplot()
        for i, s in enumerate(steps):
            y = len(steps) - 1 - i
            t0 = s["segments"][0]["start_us"]
            by_kind: dict[str, list] = {}
            for seg in s["segments"]:
                by_kind.setdefault(seg["kind"], []).append(((seg["start_us"] - t0) / 1e3, seg["dur_us"] / 1e3))
            for kind, spans in by_kind.items():
                ax.broken_barh(spans, (y - 0.35, 0.7), facecolors=colour.get(kind, "#888888"), linewidth=0)
        ax.set_yticks(range(len(steps))[::-1], [_plain("trace" if s["step"] < 0 else f"step {s['step']}")
                                                for s in steps])
        ax.set_xlabel("ms from the step's start")
        present = {seg["kind"] for s in steps for seg in s["segments"]}
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=c, label=lb) for k, lb, c in PATH_KINDS if k in present],
                  loc="upper center", bbox_to_anchor=(0.5, -0.25 if len(steps) > 2 else -0.45), ncol=4,
                  fontsize=8, frameon=False)
        return _svg(fig)
