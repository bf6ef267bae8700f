"""report/view_findings.py: the Findings section's meta lines, read back against planted findings."""

from __future__ import annotations

from types import SimpleNamespace

from trainprof.recordtypes.finding import Finding
from trainprof.report.figures import capture
from trainprof.report.view_findings import findings_view


def test_meta_says_gain_projection_and_caveat_with_info_last():
    info = Finding(id="note_only", severity="info", title="t", confidence="low")
    gain = Finding(id="host_sync", severity="high", title="Sync", evidence="e", fix="f", confidence="high",
                   estimated_gain_pct=12.5, projected_gain_pct=3.25, bottleneck="host overhead")
    run = SimpleNamespace(findings=[info, gain])  # run.json's findings: no analysis, so gains are of step time
    with capture() as shown:
        fv = findings_view(None, run, on_page=True)
    assert [f.meta for f in fv.items] == [
        "host_sync · up to 12.5% of step time, projected 3.2% · high confidence · host overhead",
        "note_only · a caveat: no speed-up claimed · low confidence"]
    assert [(s.field, s.value) for s in shown] == [("run.findings[1].estimated_gain_pct", 12.5),
                                                   ("run.findings[1].projected_gain_pct", 3.25)]
    assert fv.bottleneck is None and fv.gain_of == "step time"
    assert findings_view(None, None, on_page=False) is None  # no finding, no run, no profile: no section
    assert findings_view(None, None, on_page=True).items == ()
