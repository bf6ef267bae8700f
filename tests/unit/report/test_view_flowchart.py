"""report/view_flowchart.py: the flowchart's rows, read back against a planted path."""

from __future__ import annotations

from trainprof.recordtypes.flowchart import ChartTest, Flowchart
from trainprof.report.figures import capture
from trainprof.report.view_flowchart import flow_view

PATH = Flowchart(branch="data loading", path=[
    ChartTest(question="data wait share", value=23.46, threshold=10, answer="yes", passed=True, source="run"),
    ChartTest(question="largest part", value=None, threshold=0, answer="unknown", passed=None, source="trace")])


def test_a_stored_path_names_its_fields_and_a_computed_one_is_formatted_plainly():
    with capture() as shown:
        stored = flow_view(PATH, "analysis.flowchart")
    assert [(r.n, r.value, r.threshold) for r in stored.rows] == [(1, "23.5%", "10%"), (2, "unknown", "—")]
    assert [s.field for s in shown] == ["analysis.flowchart.path[0].value", "analysis.flowchart.path[0].threshold"]
    with capture() as shown:
        computed = flow_view(PATH, None)
    assert computed.rows == stored.rows and shown == []  # same text, no field claimed
    assert flow_view(None, None) is None
