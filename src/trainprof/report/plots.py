"""Roofline chart (matplotlib, Agg: no display needed). Renders records; computes nothing new."""

from __future__ import annotations

from pathlib import Path

import msgspec

from trainprof.recordtypes.analysis import Analysis, RooflineHeader
from trainprof.recordtypes.base import as_struct, or_default
from trainprof.report.device_text import device_short
from trainprof.report.top_roofline import as_points, top_rows

CLASS_COLOURS = {
    "gemm": "#1f77b4", "attention": "#9467bd", "convolution": "#17becf", "normalisation": "#2ca02c",
    "elementwise": "#ff7f0e", "reduction": "#d62728", "optimizer": "#8c564b", "triton": "#e377c2",
    "memcpy": "#7f7f7f", "memset": "#bcbd22", "communication": "#000000", "other": "#aaaaaa",
}


def _labels(names: list[str]) -> list[str]:
    """The key's names: shortened as a set, look-alikes kept apart (report/names.py)."""
    from trainprof.report.charts import _labels as labels

    return labels(names, 28)


def roofline_figure(header: RooflineHeader, points: list[dict], title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(11, 5.5), dpi=110)
    fig.subplots_adjust(right=0.66)  # the key of numbered points goes on the right
    pts = [p for p in points if p["intensity"] > 0 and p["achieved_tflops"] > 0]
    xs = [p["intensity"] for p in pts] or [1.0]
    x_lo = min(min(xs) / 4, 0.05)
    x_hi = max(max(xs) * 4, (or_default(header.ridge_flop_per_byte, None) or 10) * 8)
    grid = np.logspace(np.log10(x_lo), np.log10(x_hi), 200)
    bw = or_default(header.peak_bandwidth_gbs, None)
    peaks = or_default(header.peaks_by_dtype, None) or {}
    used = {p["dtype"] for p in points if p.get("dtype")} or {or_default(header.dtype, None)}
    styles = ["-", "--", ":", "-."]
    if bw:
        for i, (dt, peak) in enumerate(sorted((d, v) for d, v in peaks.items() if d in used and v)):
            ax.plot(grid, np.minimum(peak, grid * bw / 1e3), styles[i % 4], color="#444444", lw=1.4,
                    label=f"roof {dt}: {peak:.3g} TFLOP/s, {bw:.3g} GB/s")
            ridge = peak * 1e3 / bw
            ax.axvline(ridge, color="#bbbbbb", lw=0.8, ls=":")
            ax.annotate(f"ridge {ridge:.0f}", (ridge, peak), textcoords="offset points", xytext=(4, -12),
                        fontsize=7, color="#666666")
    seen = set()
    sizes = []
    for p in pts:
        cls = p.get("class") or "other"
        sizes.append(40 + 160 * min(1.0, p["device_time_us"] / max(q["device_time_us"] for q in pts)))
        ax.scatter(p["intensity"], p["achieved_tflops"], s=sizes[-1], color=CLASS_COLOURS.get(cls, "#aaaaaa"),
                   edgecolors="black", linewidths=0.5, zorder=3, label=cls if cls not in seen else None)
        seen.add(cls)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    _number_points(fig, ax, pts, sizes)
    key = "\n".join(
        f"{i:>2} {name} {_dims(p.get('input_dims'))}"
        f"\n   {p.get('roofline_pct') or 0:.0f}% of roof, {p.get('bound') or '?'}"
        for i, (p, name) in enumerate(zip(pts, _labels([p["name"] for p in pts])), 1))
    fig.text(0.675, 0.93, key, fontsize=7, family="monospace", va="top")
    ax.set_xlabel("arithmetic intensity (FLOP / byte, minimum traffic)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def _number_points(fig, ax, pts: list[dict], sizes: list[float]) -> None:  # noqa: ANN001
    """Each point's number beside it where it meets no other number or marker
    (report/placement.py: the same placement as report.html's labels); names are in the key."""
    from trainprof.report.placement import place

    fig.canvas.draw()  # fixes the limits and the axes' size in pixels
    box = ax.get_window_extent()
    px_per_pt = fig.dpi / 72
    xy = []
    for p, s in zip(pts, sizes):
        x, y = ax.transData.transform((p["intensity"], p["achieved_tflops"]))
        xy.append((x - box.x0, box.y1 - y, (s ** 0.5) * px_per_pt / 2))  # y down, marker radius in px
    for i, b in enumerate(place(xy, [str(i) for i in range(1, len(pts) + 1)], box.width, box.height, 7 * px_per_pt,
                                len(pts)), 1):
        if b is not None:
            x, y = ax.transData.inverted().transform((box.x0 + b.x0, box.y1 - (b.y0 + b.y1) / 2))
            ax.annotate(str(i), (x, y), fontsize=7, va="center", ha="left", annotation_clip=False)


def _dims(d) -> str:  # noqa: ANN001
    from trainprof.report.units import shapes

    return shapes(d, times="x", sep=",", tensor_lists=False)[:24]


def write_roofline(header: RooflineHeader, points: list[dict], out_dir: Path, stem: str, title: str) -> list[Path]:
    """roofline.png and roofline.svg in `out_dir` (atomic: temp names, then rename)."""
    from trainprof import atomic

    import matplotlib.pyplot as plt

    fig = roofline_figure(header, points, title)
    written = []
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for ext in ("png", "svg"):
            final = out_dir / f"{stem}.{ext}"
            with atomic.temp_path(final) as tmp:  # usual file mode, fsync'd, renamed
                fig.savefig(tmp, format=ext)
            written.append(final)
    finally:
        plt.close(fig)
    return written


def write_analysis_plots(result: dict | Analysis, out: Path) -> list[Path]:
    """roofline.png/.svg per rank (roofline_rank<N>.* when there are several)."""
    a = as_struct(result, Analysis)
    written = []
    many = len(a.ranks) > 1
    for r in a.ranks:
        # the top-5 table's operators when priced (the charts draw dicts)
        points = as_points(top_rows(r)) or msgspec.to_builtins(r.roofline_points)
        if not points:
            continue
        stem = f"roofline_rank{r.rank}" if many else "roofline"
        dev = device_short(r)
        title = f"Roofline, top {len(points)} ops: {dev} ({or_default(r.roofline.source, None)})"
        written += write_roofline(r.roofline, points, out, stem, title)
    return written
