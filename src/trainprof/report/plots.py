"""The chart files for report.md and `--plots` (roofline.png/.svg, tune.png): report.html's own
Vega-Lite specs (report/charts.py, the one definition of each chart and its colours), drawn
to PNG and SVG by vl-convert (Vega's renderer in an embedded JavaScript engine, no browser).

Why not a second chart stack: the roofline and the ladder used to be drawn twice (matplotlib
here, Vega-Lite for the page) with a copied colour map, and the two drifted (labels, marker
sizes). Cost (docs/benchmarks.md, "Chart files"): +0.42 s and +85 MB for a roofline's PNG
and SVG, most of it the engine starting; only with `--plots`,
`run --profile` and `tune`, never on the `analyze` path (tests/integration/test_analyze_imports.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import msgspec

from trainprof.recordtypes.analysis import Analysis, RooflineHeader
from trainprof.recordtypes.base import as_struct, or_default
from trainprof.recordtypes.tune import Tune
from trainprof.report import charts
from trainprof.report.device_text import device_short
from trainprof.report.top_roofline import as_points, top_rows

PNG_SCALE = 1.0  # CSS px per image px: ~60-200 KB a chart (one per rank); the SVG beside it is the sharp one
FILE_WIDTH = 640  # px: a chart the page sizes to its container ("width": "container") gets this in a file
# the Vega-Lite 5 line the specs are written for ($schema v5); the page's vendored 5.23 is not
# among vl-convert's bundled versions, 5.21 is the nearest (the default would be 6.x)
VL_VERSION = "5.21"
# the data is inline: no URL may be fetched while drawing (nothing of a record leaves the machine)
NO_URLS: list[str] = []


def _static(spec: dict[str, Any]) -> dict[str, Any]:
    """The page's spec for a file: a fixed width where the page sizes it to its container."""
    return {**spec, "width": FILE_WIDTH} if spec.get("width") == "container" else spec


def _skipped(stem: str, exts: tuple[str, ...], why: str) -> list[Path]:
    # a chart file is a picture of numbers already in the record: never worth the run it belongs
    # to (on the H200 of 2026-11-28 a machine without vl-convert lost a profiled run this way)
    names = "/".join(f"{stem}.{e}" for e in exts)
    print(f"trainprof: note: {names} not written: {why}; report.html draws the same chart", file=sys.stderr)
    return []


def write_chart_files(spec: dict[str, Any], out_dir: Path, stem: str, exts: tuple[str, ...]) -> list[Path]:
    """`stem`.png / `stem`.svg in `out_dir` (atomic: temp name, then rename); none, with a note on
    stderr, where vl-convert is missing or fails to draw."""
    try:
        import vl_convert
    except ImportError:
        return _skipped(stem, exts, "vl-convert-python is not installed (pip install vl-convert-python)")

    from trainprof import atomic

    spec = _static(spec)
    out_dir.mkdir(parents=True, exist_ok=True)
    drawn = []
    for ext in exts:
        try:
            drawn.append((ext, vl_convert.vegalite_to_png(spec, vl_version=VL_VERSION, scale=PNG_SCALE,
                                                          allowed_base_urls=NO_URLS)
                          if ext == "png" else
                          vl_convert.vegalite_to_svg(spec, vl_version=VL_VERSION, allowed_base_urls=NO_URLS).encode()))
        except Exception as e:  # the renderer's own error (a JS engine inside): say it, keep the run
            return _skipped(stem, exts, f"vl-convert failed ({type(e).__name__}: {str(e)[:200]})")
    written = []
    for ext, data in drawn:
        final = out_dir / f"{stem}.{ext}"
        atomic.write_bytes(final, data)
        written.append(final)
    return written


def write_roofline(header: RooflineHeader, points: list[dict], out_dir: Path, stem: str, title: str) -> list[Path]:
    """roofline.png and roofline.svg in `out_dir`: report.html's roofline (charts.roofline)."""
    return write_chart_files(charts.roofline(header, points, title), out_dir, stem, ("png", "svg"))


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


def write_tune_chart(doc: Tune, out: Path) -> Path | None:
    """tune.png: report.html's ladder chart (charts.ladder: each knob's tokens/s relative to the
    baseline, kept knobs green); None when no trial measured a speed-up."""
    spec = charts.ladder(doc.trials, doc.best.knobs)
    if spec is None:
        return None
    return write_chart_files(spec, out, "tune", ("png",))[0]
