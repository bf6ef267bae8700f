"""Removing work never projects a slower step, and a finding's projection is its what-if's
(issue #39 item 5, ARCHITECTURE.md "Findings are claims").

Planted truth: the A100 trace-diff `test` trace (6 steps, a CPU that never waits for the GPU,
so the re-timing keeps its recorded times) with one communication kernel added to its first
(ramp-up) step, on a stream of its own, running 80 ms past that step's end — a first step's
broadcast or barrier. Removing exposed communication takes it away: the ramp-up step ends
80 ms earlier, and the steps after it cannot follow (their ends are the CPU's, which the edit
does not move). Before the fix the edit applied to the ramp-up step too, the mean period
was measured from its moved end, and the step projected 4.1% *slower* (112.9 → 117.4 ms;
the finding showed 0.0%). The right answer, known before the code runs: the kernel is not in the steady steps,
so their projection is the unplanted trace's (0.12%), and never below 0.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest

from trainprof.analysis.graph.projection import with_projection
from trainprof.diagnose.catalogue import scenarios
from trainprof.diagnose.registry import path_kind_of
from trainprof.recordtypes.finding import Finding
from trainprof.analysis.graph.whatif import REMOVABLE, Edit, whatif_trace
from trainprof.trace import read_trace

DATA = Path(__file__).parents[2] / "data"
TEST_TRACE = DATA / "traces" / "real" / "hta_trace_diff_a100_vs_v100" / "test" / "test.json.gz"
TRACE_FILES = sorted(p for p in (DATA / "traces").rglob("*") if p.is_file() and p.name.endswith((".json", ".json.gz")))
RECORDS = sorted((DATA / "reports").rglob("analysis.json"))


def _planted(tmp_path: Path, past_end_us: float) -> Path:
    d = json.load(gzip.open(TEST_TRACE))
    ev = d["traceEvents"]
    nccl = next(e for e in ev if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel"))
    first = min((e for e in ev if e.get("name", "").startswith("ProfilerStep")), key=lambda e: e["ts"])
    end = max(e["ts"] + e["dur"] for e in ev if e.get("cat") == "kernel" and first["ts"] <= e["ts"] < first["ts"] + first["dur"])
    k = copy.deepcopy(nccl)
    start = first["ts"] + first["dur"] // 2
    k.update(ts=start, dur=int(end + past_end_us - start), tid=99)
    k["args"] = {**k["args"], "stream": 99, "correlation": 99_999_999, "External id": 99_999_999}
    ev.append(k)
    out = tmp_path / "planted.json.gz"
    with gzip.open(out, "wt") as f:
        json.dump(d, f)
    return out


def _remove(path: Path, what: str):
    (s,) = whatif_trace(read_trace(str(path)), file=str(path), edits=[Edit("remove", what)]).scenarios
    return s


def test_a_ramp_up_collective_removed_does_not_slow_the_steady_steps(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPROF_STRICT_INVARIANTS", "1")  # a broken claim raises where it is made
    base = _remove(TEST_TRACE, "exposed_comm")
    s = _remove(_planted(tmp_path, 80_000.0), "exposed_comm")
    assert s.violations == []
    assert s.projected_step_us <= s.measured_step_us
    assert 0.0 <= s.gain_pct <= s.bound_pct
    # the planted kernel is the ramp-up's: the steady steps' gain is the unplanted trace's
    assert s.projected_step_us - s.measured_step_us == pytest.approx(base.projected_step_us - base.measured_step_us,
                                                                     abs=1.0)


@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda p: str(p.relative_to(DATA / "traces")))
def test_no_removal_projects_a_slower_step_on_a_shipped_trace(path, monkeypatch):
    monkeypatch.setenv("TRAINPROF_STRICT_INVARIANTS", "1")
    w = whatif_trace(read_trace(str(path)), file=str(path), edits=[])
    assert [s.label for s in w.scenarios] == [f"remove {r}" for r in REMOVABLE]
    for s in w.scenarios:
        assert s.violations == [], (s.label, s.violations)
        assert s.projected_step_us <= s.measured_step_us + 1e-3, s.label
        assert s.gain_pct >= 0.0, s.label


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.parent.name)
def test_no_removal_projects_a_slower_step_in_a_shipped_record(path):
    doc = json.loads(path.read_text())
    for r in doc.get("ranks") or []:
        for s in (r.get("whatif") or {}).get("scenarios") or []:
            assert s["projected_step_us"] <= s["measured_step_us"] + 1e-3, s["label"]


def test_a_findings_projection_is_its_whatifs_gain(tmp_path):
    """The figure the finding shows and the one the what-if table shows are one value: no
    re-rounding, no clamp (a −4.1% projection was shown as 0.0% beside a table saying −4.1%)."""
    from trainprof.analysis.graph.whatif import standard_whatifs
    from trainprof.analysis.graph.clock import corrected
    from trainprof.analysis.graph.depgraph import build_graph
    from trainprof.analysis.timeline.context import Context

    ctx, _ = corrected(Context.build(read_trace(str(_planted(tmp_path, 80_000.0)))))
    block = standard_whatifs(ctx, build_graph(ctx))
    gains = {s.label: s for s in block.scenarios}
    for fid, label in scenarios().items():  # each rule's declared scenario (diagnose/registry.py)
        f = with_projection(Finding(id=fid, evidence="e", estimated_gain_pct=0.0), label, path_kind_of(fid), block, None)
        if label not in gains:  # a scenario of named rows (whatif.row_scenarios) exists only where they do
            assert label in ("remove tiny_kernels", "remove redundant_copies") and f.projected_gain_pct is None
            continue
        assert f.projected_gain_pct == gains[label].gain_pct
        assert f.estimated_gain_pct == gains[label].bound_pct
