"""The top operators on the roofline (analysis/cost/roofline_top.py): each top-ops row priced over
all its calls against the row's own time, on a hand-written CPU trace worked on paper."""

from __future__ import annotations

import json

import pytest

from trainprof.analysis.cost.roofline import Roof
from trainprof.analysis.trace_report import analyze_trace
from trainprof.trace import read_trace

from tests.plain import plain


def _op(name, ts, dur, dims, types):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": {"Input Dims": dims, "Input type": types}}


def test_a_top_op_is_priced_over_all_its_shapes_against_its_own_time(tmp_path):
    # one profiler step: aten::mm [64,128]×[128,256] twice (400 µs each), once [32,128]×[128,64]
    # (100 µs), aten::add_ [64,256] + [64,256] (100 µs), aten::gelu with no shapes recorded (50 µs)
    f = ["float", "float"]
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 0, "dur": 1200},
          _op("aten::mm", 10, 400, [[64, 128], [128, 256]], f), _op("aten::mm", 420, 400, [[64, 128], [128, 256]], f),
          _op("aten::mm", 830, 100, [[32, 128], [128, 64]], f),
          _op("aten::add_", 940, 100, [[64, 256], [64, 256], []], ["float", "float", "Scalar"]),
          {"ph": "X", "cat": "cpu_op", "name": "aten::gelu", "pid": 1, "tid": 1, "ts": 1050, "dur": 50}]
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    roof = Roof({"fp32": 1.0}, 100.0, "test")  # 1 TFLOP/s, 100 GB/s: ridge 10 FLOP/B
    r = plain(analyze_trace(read_trace(p), file=str(p), roof=roof))
    rows = {o["name"]: o for o in r["top_ops"]}
    mm = rows["aten::mm"]
    assert mm["total_us"] == pytest.approx(900.0)  # the table's time (self CPU), the roofline's too
    rf = mm["roofline"]
    # FLOPs 2·(2·64·256·128) + 2·32·64·128 = 2·4,194,304 + 524,288 = 8,912,896
    # bytes 2·(64·128 + 128·256 + 64·256)·4 + (32·128 + 128·64 + 32·64)·4 = 458,752 + 57,344 = 516,096
    assert (rf["flops"], rf["bytes"], rf["calls"], rf["calls_priced"]) == (8_912_896, 516_096, 3, 3)
    assert rf["intensity"] == pytest.approx(8_912_896 / 516_096)  # 17.27 FLOP/B, above the ridge
    # achieved 8,912,896 / 900 µs = 9.90 GFLOP/s = 0.0099 TFLOP/s of an attainable 1.0: 0.99% < 10%
    assert rf["achieved_tflops"] == pytest.approx(8_912_896 / 900e-6 / 1e12)
    assert rf["attainable_tflops"] == 1.0 and rf["roofline_pct"] == pytest.approx(0.990, abs=1e-3)
    assert rf["bound"] == "latency"
    # by shape there are two mm points; the table's operator is one row
    assert sum(pt["name"] == "aten::mm" for pt in r["roofline_points"]) == 2
    # add_: 64·256 = 16,384 FLOPs, (3 · 16,384)·4 = 196,608 bytes: 0.083 FLOP/B, below the ridge;
    # 16,384 / 100 µs = 0.16 GFLOP/s of min(1, 0.083·100/1e3 = 0.0083): 2.0% → latency
    add = rows["aten::add_"]["roofline"]
    assert (add["flops"], add["bytes"]) == (16_384, 196_608)
    assert add["roofline_pct"] == pytest.approx(100 * 16_384 / 100e-6 / 1e12 / (16_384 / 196_608 * 0.1))
    # no shapes: no FLOPs, said so, never a guess
    gelu = rows["aten::gelu"]["roofline"]
    assert gelu["flops"] is None and gelu["bound"] is None and "no recorded shapes" in gelu["note"]
