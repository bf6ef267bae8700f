"""The chart files (report/plots.py) are report.html's Vega-Lite specs drawn by vl-convert: a
planted roofline drawn to SVG shows exactly the planted points, at the planted positions, in
the one colour map's colours, with trace text kept as text."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

from trainprof.recordtypes.analysis import RooflineHeader
from trainprof.report.charts import ROOF_W
from trainprof.report.colours import CLASS_COLOURS
from trainprof.report.plots import write_roofline

# two operators: a GEMM at 100 FLOP/B reaching 50 TFLOP/s, an element-wise op at 1 FLOP/B, 0.5 TFLOP/s;
# the name holds < > & as kernel names do
POINTS = [{"name": "aten::mm<float>&", "intensity": 100.0, "achieved_tflops": 50.0, "device_time_us": 800.0,
           "dtype": "bf16", "class": "gemm", "roofline_pct": 50.0, "bound": "compute"},
          {"name": "aten::add", "intensity": 1.0, "achieved_tflops": 0.5, "device_time_us": 200.0,
           "dtype": "bf16", "class": "elementwise", "roofline_pct": 50.0, "bound": "memory"}]
HEADER = RooflineHeader(peak_tflops=100.0, peak_bandwidth_gbs=1000.0, ridge_flop_per_byte=100.0, dtype="bf16",
                        source="user", peaks_by_dtype={"bf16": 100.0})


def test_the_roofline_file_draws_the_planted_points(tmp_path):
    png, svg = write_roofline(HEADER, POINTS, tmp_path, "roofline", "planted")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    root = ET.fromstring(svg.read_text())  # well-formed: the name's < > & are escaped
    pts = [e for e in root.iter() if e.get("aria-roledescription") == "point"]
    assert len(pts) == 2
    labels = [e.get("aria-label") for e in pts]
    assert "op: aten::mm<float>&" in labels[0] and "op: aten::add" in labels[1]
    assert [e.get("fill") for e in pts] == [CLASS_COLOURS["gemm"], CLASS_COLOURS["elementwise"]]
    # x on the log axis: lo = min(1 / 4, 0.05) = 0.05, hi = max(100 × 4, ridge 100 × 8) = 800, so
    # x(I) = 760 × (log10 I − log10 0.05) / (log10 800 − log10 0.05):
    # x(100) = 760 × 3.30103 / 4.20412 = 596.7 px, x(1) = 760 × 1.30103 / 4.20412 = 235.2 px
    xs = [float(re.match(r"translate\(([-\d.]+),", e.get("transform")).group(1)) for e in pts]
    span = math.log10(800) - math.log10(0.05)
    assert abs(xs[0] - ROOF_W * (2 - math.log10(0.05)) / span) < 0.5
    assert abs(xs[1] - ROOF_W * (0 - math.log10(0.05)) / span) < 0.5
    texts = [t.text for t in root.iter() if t.text]
    assert "bf16: 100 TFLOP/s, 1e+03 GB/s" in texts  # the roof's legend entry


def test_without_vl_convert_no_chart_file_and_a_note(tmp_path, monkeypatch, capsys):
    """The H200 run of 2026-11-28 lost a profiled run folder to a missing vl-convert: a chart is
    never worth the record it pictures. None is written, stderr says why."""
    monkeypatch.setitem(__import__("sys").modules, "vl_convert", None)  # import raises ImportError
    assert write_roofline(HEADER, POINTS, tmp_path, "roofline", "planted") == []
    assert list(tmp_path.iterdir()) == []
    err = capsys.readouterr().err
    assert "roofline.png/roofline.svg not written" in err and "vl-convert-python is not installed" in err


def test_a_renderer_failure_writes_neither_file(tmp_path, monkeypatch, capsys):
    from trainprof.report import plots

    # the child draws the PNG, then fails on the SVG: neither is written (both or none)
    monkeypatch.setattr(plots, "_DRAW", "import struct, sys\nsys.stdout.buffer.write(struct.pack('<Q', 4) + b'PNG!')\n"
                                        "raise RuntimeError('deno: out of memory')")
    assert write_roofline(HEADER, POINTS, tmp_path, "roofline", "planted") == []
    assert list(tmp_path.iterdir()) == []
    assert "vl-convert failed (RuntimeError: deno: out of memory)" in capsys.readouterr().err


def test_a_renderer_that_dies_natively_costs_the_chart_not_the_process(tmp_path, monkeypatch, capsys):
    """vl-convert's engine aborts with SIGTRAP where it cannot reserve its address space (issue
    #45: `profile` under `ulimit -v` died with exit 133, losing the program's exit code): drawn
    in a child, that death is a note and no chart file."""
    from trainprof.report import plots

    monkeypatch.setattr(plots, "_DRAW", "import os, signal; os.kill(os.getpid(), signal.SIGTRAP)")
    assert write_roofline(HEADER, POINTS, tmp_path, "roofline", "planted") == []
    assert list(tmp_path.iterdir()) == []
    assert "vl-convert died of SIGTRAP" in capsys.readouterr().err


def test_tune_png_not_drawn_is_none_not_an_index_error(tmp_path, monkeypatch, capsys):
    from pathlib import Path

    from trainprof.recordtypes.base import load
    from trainprof.recordtypes.tune import Tune
    from trainprof.report import plots

    doc = load(Path(__file__).resolve().parents[2] / "data" / "reports" / "tune" / "tune.json", Tune)
    monkeypatch.setattr(plots, "_DRAW", "import os, signal; os.kill(os.getpid(), signal.SIGTRAP)")
    assert plots.write_tune_chart(doc, tmp_path) is None
    assert list(tmp_path.iterdir()) == []
    assert "tune.png not written: vl-convert died of SIGTRAP" in capsys.readouterr().err  # it was drawn, and died
