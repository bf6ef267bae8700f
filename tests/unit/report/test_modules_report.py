"""The per-module table and py-spy's host stacks in the terminal, report.md and report.html,
from a shipped planted trace (tests/data/modules: the Fast/Slow model of
tests/unit/analysis/test_planted_modules.py, with py-spy's samples beside it)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from trainprof.jobs.analyze_config import AnalyzeJob
from trainprof.jobs.analyze_job import execute
from trainprof.options import OutputOptions

TRACE = Path(__file__).resolve().parents[2] / "data" / "modules" / "trace.json.gz"


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    out = tmp_path_factory.mktemp("mod") / "out"
    return execute(AnalyzeJob(paths=(str(TRACE),), output=OutputOptions(out=str(out))))


def test_record_has_modules_and_host_stacks(analysed):
    r = analysed.record.ranks[0]
    assert r.modules.rows[0].module == "Slow" and r.modules.steps == 4
    assert r.host_stacks.samples > 0 and r.host_stacks.top_total


def test_terminal_table(analysed):
    from trainprof.report.analysis_terminal import print_analysis

    buf = io.StringIO()
    print_analysis(analysed.record, Console(file=buf, width=100, force_terminal=False))
    text = buf.getvalue()
    assert "Modules, per step" in text and text.index("Slow") < text.index("Fast")
    assert "host (py-spy" in text


def test_markdown_and_html(analysed):
    md = (analysed.out / "report.md").read_text()
    assert "**Modules**" in md and md.index("| 1 | Slow |") < md.index("| 2 | Fast |")
    assert "**Host stacks**" in md
    html = (analysed.out / "report.html").read_text()
    assert "<h3>Modules</h3>" in html and "Host stacks (py-spy)" in html


def test_analyze_modules_pattern_filters_rows(tmp_path):
    res = execute(AnalyzeJob(paths=(str(TRACE),), modules="^Fast$"))
    m = res.record.ranks[0].modules
    assert [r.module for r in m.rows] == ["Fast"] and m.pattern == "^Fast$"
