"""report/view_bench.py: a benchmark's results as a table, worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace

from trainprof.report.view_bench import bench_table


def test_seconds_as_ms_bytes_binary_figures_right_aligned():
    bench = SimpleNamespace(results=[{"op": "mm", "time_s": 0.0015, "bytes": 2048, "tflops": 1.23456, "ok": True,
                                      "per_rank": [1, 2]},  # not a scalar: no column
                                     {"op": "add", "time_s": None, "bytes": 3 * 2**29, "tflops": 12345}])
    t = bench_table(bench)
    assert [(h.text, h.cls) for h in t.head] == [("op", ""), ("time", "n"), ("bytes", "n"), ("tflops", "n"),
                                                ("ok", "n")]
    assert [[(c.text, c.cls) for c in r.cells] for r in t.rows] == [
        [("mm", ""), ("1.5 ms", "n"), ("2.00 KiB", "n"), ("1.23", "n"), ("True", "n")],
        [("add", ""), ("—", ""), ("1.50 GiB", "n"), ("12,345", "n"), ("—", "")]]
    assert t.row_lines and not t.spread
