"""report/view_diff.py: a diff's phrases built once, the same in report.html, report.md and diff.md."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
from markupsafe import escape

from trainprof.recordtypes.diff import Diff
from trainprof.report.diff_terminal import diff_markdown
from trainprof.report.html import render_html
from trainprof.report.loader import load_folder
from trainprof.report.markdown import render_markdown
from trainprof.report.view_diff import diff_view

DIFF = Path(__file__).resolve().parents[2] / "data" / "reports" / "diff" / "diff.json"
VERDICT = {"call": "faster", "per": "token", "ratio": 1.8, "ci_low": 1.5, "ci_high": 2.1, "confidence": 0.95,
           "why": "planted"}


def test_the_verdict_and_change_column_reach_all_three_reports(tmp_path):
    doc = json.loads(DIFF.read_text())
    doc["verdict"] = VERDICT
    (tmp_path / "diff.json").write_text(json.dumps(doc))
    d = msgspec.json.decode(json.dumps(doc), type=Diff)
    v = diff_view(d)
    # hand-worded: 1.80x at the median step, its 95% interval
    assert v.verdict == "faster per token: 1.80× at the median step (95% CI 1.50×–2.10×)"
    assert len(v.ops_change) == len(d.ops.top) and len(v.kernels_change) == len(d.kernels.top)
    b = load_folder(tmp_path)
    html, md, diff_md = render_html(b), render_markdown(b), diff_markdown(d)
    assert all(v.verdict in text for text in (html, md, diff_md))
    assert str(escape(v.ops_title)) in html and v.ops_title in md
    assert all(c in html for c in v.ops_change)


def test_diff_md_reads_its_sides_and_gains_from_the_view_not_from_functions():
    doc = json.loads(DIFF.read_text())
    doc["base"].update(has_gpu=True, gpu_steps=5)
    doc["new"] = None  # one side only: no line for the other
    doc["findings"][1]["base_projected_pct"] = 10.0
    d = msgspec.json.decode(json.dumps(doc), type=Diff)
    v = diff_view(d)
    # hand-worded: the side's device, 6 profiled steps, 5 of them with GPU work
    assert v.sides == (("base", "traces/real/hta_trace_diff_a100_vs_v100/control/control.json.gz",
                        "NVIDIA A100-PG509-200, 6 profiled steps, 5 with GPU work"),)
    assert [g for _, *g in v.findings[:2]] == [["—", "up to 24.8%"], ["up to 12.7%, projected 10.0%", "—"]]
    md = diff_markdown(d)
    assert "* base: `traces/real/hta_trace_diff_a100_vs_v100/control/control.json.gz` (NVIDIA" in md
    assert "* new:" not in md and "| up to 12.7%, projected 10.0% | — |" in md
