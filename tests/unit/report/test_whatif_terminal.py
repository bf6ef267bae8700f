"""The critical-path and what-if tables keep every number whole at 80 and 120 columns."""

from pathlib import Path

import pytest

from tests.unit.report.test_fit import Capture, check
from trainprof.analysis.trace_report import analyze_trace
from trainprof.analysis.graph.whatif import parse_scale, whatif_trace
from trainprof.report.whatif_terminal import print_critical_path, print_whatif, print_whatif_block
from trainprof.trace import read_trace

TRACE = (Path(__file__).resolve().parents[2] / "data" / "traces" / "real" / "hta_small_edge_cases"
         / "step_based_trace_2543932.json.gz")


@pytest.fixture(scope="module")
def trace():
    return read_trace(str(TRACE))


@pytest.mark.parametrize("width", (80, 120))
def test_whatif_tables_fit(trace, width):
    con = Capture(width)
    print_whatif(whatif_trace(trace, file=str(TRACE), edits=[parse_scale("aten::empty_strided=0.5")]), con)
    check(con)
    out = con.export_text()
    assert "scale aten::empty_strided=0.5" in out and "per step" in out


@pytest.mark.parametrize("width", (80, 120))
def test_analysis_sections_fit(trace, width):
    rank = analyze_trace(trace, file=str(TRACE))
    con = Capture(width)
    print_critical_path(rank.critical_path, con)
    print_whatif_block(rank.whatif, con)
    check(con)
    assert "remove launch_overhead" in con.export_text()
