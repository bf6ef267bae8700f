"""No finding about nothing (a gain under 0.5% is `info`), and a headline the tables agree with
(engine.principal). Records are test_rules.rank()'s: a real analysed trace with hand-set numbers
(SPAN = 1,000,000 µs of GPU timeline, so 1% = 10,000 µs)."""

from __future__ import annotations

import gzip
import json
from types import SimpleNamespace
from pathlib import Path

import msgspec
import pytest
from test_rules import TH, rank, scenario

from trainprof.diagnose import diagnose_rank
from trainprof.diagnose.engine import measured_principal, principal
from trainprof.diagnose.finding import Finding, severity

REAL = Path(__file__).resolve().parents[2] / "data" / "traces" / "real"
SYNCS = [{"name": "cudaStreamSynchronize", "count": 20, "total_us": 50.0}]  # 2 per step of 10: host_sync fires


def test_severity_bands():
    assert [severity(g) for g in (0.0, 0.3, 0.49, 0.5, 4.9, 5.0, 19.9, 20.0)] == \
        ["info", "info", "info", "low", "low", "medium", "medium", "high"]
    assert TH.info_gain_pct == 0.5


def test_a_finding_of_0_3_percent_is_info():
    # host_sync fires on 2 blocking calls per step; the idle they caused: 3,000 µs = 0.3% of the span
    found = diagnose_rank(rank(idle_breakdown={"host_sync_us": 3_000.0, "sync_calls": SYNCS}, whatif=None))
    f = {x.id: x for x in found}["host_sync"]
    assert (f.estimated_gain_pct, f.severity) == (0.3, "info")
    # 6,000 µs = 0.6% ≥ 0.5%: a (low) claim
    found = diagnose_rank(rank(idle_breakdown={"host_sync_us": 6_000.0, "sync_calls": SYNCS}, whatif=None))
    assert {x.id: x for x in found}["host_sync"].severity == "low"


def test_the_projected_gain_decides_where_the_whatif_has_one():
    # bound 30% (300,000 µs of DataLoader idle) but the re-timed graph projects 0.3%: info, listed last;
    # host_sync's bound 6% (60,000 µs) keeps its band (medium): the projection only decides info
    r = rank(idle_breakdown={"data_loading_us": 300_000.0, "host_sync_us": 60_000.0, "sync_calls": SYNCS},
             whatif={"method": "m", "scenarios": [scenario("remove data_loading", 0.3), scenario("remove host_sync", 4.0)]})
    found = diagnose_rank(r)
    assert [(f.id, f.severity) for f in found] == [("host_sync", "medium"), ("data_loading", "info")]
    assert found[1].estimated_gain_pct == 30.0 and found[1].projected_gain_pct == 0.3


def test_a_cpu_trace_headline_never_comes_from_an_info_finding():
    info = Finding(id="host_sync", severity="info", bottleneck="host overhead")
    low = Finding(id="data_loading", severity="low", bottleneck="data")
    assert principal([info], None) is None
    assert principal([info, low], None) == "data"


def test_a_mostly_idle_timeline_names_its_idle_cause_not_compute():
    # GPU time: compute 31 + communication 0 + memcpy 0 + idle 69 = 100%; idle 690,000 µs of which
    # other 600,000 (work already queued) + unattributed 40,000 = 640,000 unexplained, host 50,000
    r = rank(temporal_breakdown={"compute_pct": 31.0, "idle_pct": 69.0},
             idle_breakdown={"idle_us": 690_000.0, "other_us": 600_000.0, "unattributed_us": 40_000.0,
                             "host_launch_us": 50_000.0})
    assert principal([], r) == "idle (unexplained)"
    # the same idle with launches behind most of it: host overhead (sync 0 + launch 600,000)
    r = rank(temporal_breakdown={"compute_pct": 31.0, "idle_pct": 69.0},
             idle_breakdown={"idle_us": 690_000.0, "other_us": 90_000.0, "host_launch_us": 600_000.0})
    assert principal([], r) == "host overhead"
    # memcpy 40% > compute 35% > idle 25%: the copies lead
    r = rank(temporal_breakdown={"compute_pct": 35.0, "memcpy_pct": 40.0, "idle_pct": 25.0})
    assert principal([], r) == "memcpy"


def test_a_real_trace_planted_69_percent_idle_is_not_compute(tmp_path):
    """Planted truth: the H100 Qwen forward (compute 91.5%) with 7 of every 10 kernels deleted.
    The kernels left were queued long before the deleted ones would have ended (the host runs
    ahead), so the gaps are GPU idle with the next work already queued or launched before the
    trace window: idle (unexplained), ~70% of the timeline, over compute's ~30%."""
    from trainprof.jobs.analyze import analyze_paths

    src = REAL / "tracelens_h100_hf_inference" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    d = json.load(gzip.open(src))
    kernels = [i for i, e in enumerate(d["traceEvents"]) if e.get("cat") == "kernel"]
    drop = {k for n, k in enumerate(kernels) if n % 10 < 7}
    d["traceEvents"] = [e for i, e in enumerate(d["traceEvents"]) if i not in drop]
    planted = tmp_path / "qwen_70pct_idle.json"
    planted.write_text(json.dumps(d))
    r = analyze_paths([str(planted)]).ranks[0]
    tb = r.temporal_breakdown
    assert tb.idle_pct >= 69 and tb.compute_pct < 35
    # where the time goes is idle (unexplained); the headline is the top claim's class, if any
    # (issue #39: it never contradicts the list under it)
    assert measured_principal(r) == "idle (unexplained)"
    claims = [f for f in msgspec.to_builtins(r.findings) if f["severity"] != "info"]
    assert r.bottleneck == (claims[0]["bottleneck"] if claims else "idle (unexplained)")
    ib = r.idle_breakdown
    assert ib.other_us + ib.unattributed_us > ib.host_sync_us + ib.host_launch_us + ib.data_loading_us


# a bound of 0.4% that the what-if projects at 8.5% (the MI300 Qwen trace's host_sync): not info, low
@pytest.mark.parametrize("gain, projected, expect", [(10.0, None, "medium"), (10.0, 0.2, "info"), (0.4, None, "info"),
                                                     (0.4, 8.5, "low")])
def test_info_is_decided_after_projection(gain, projected, expect):
    from trainprof.diagnose.finding import cap_severity

    f = Finding(id="x", severity=severity(gain), estimated_gain_pct=gain, projected_gain_pct=projected)
    assert cap_severity([f], TH)[0].severity == expect


def _f(fid: str, bound: float, projected: float | None, bottleneck: str, sev: str = "high") -> Finding:
    return Finding(id=fid, severity=sev, title=fid, evidence="e", estimated_gain_pct=bound,
                   projected_gain_pct=projected, fix="f", confidence="medium", bottleneck=bottleneck)


def test_a_bound_only_finding_ranks_by_its_discounted_bound_in_every_list():
    """Planted (issue #39 item 6): the data-bound V100 ResNet — "low Tensor Core" with a 34.6%
    bound and no projection, data loading projected 32.5% (its measured fix gave 27.6%). Before,
    the bound at face value ranked Tensor Cores first and the headline named compute; ranked by
    0.71 × 34.6 = 24.6% < 32.5% data loading leads every list, and the headline with it."""
    from trainprof.analysis.graph.projection import BOUND_DISCOUNT, rank_key, ranking_gain
    from trainprof.analysis.job.diff import findings_delta
    tc, data = _f("low_tensor_core", 34.6, None, "compute"), _f("data_loading", 52.9, 32.5, "data")
    assert ranking_gain(34.6, None) == pytest.approx(BOUND_DISCOUNT * 34.6)
    assert ranking_gain(34.6, None) < ranking_gain(52.9, 32.5) == 32.5
    assert [f.id for f in sorted([tc, data], key=rank_key)] == ["data_loading", "low_tensor_core"]
    # the engine's order (terminal, analysis.json) and the headline
    assert principal([tc, data], None) == "data"
    # report.md / report.html list through findings_list.listed, the same key
    from trainprof.report.findings_list import listed

    a = SimpleNamespace(ranks=[SimpleNamespace(findings=[tc, data])], multi_rank=None)
    assert [f["id"] for _, f in listed(a, "analysis")] == ["data_loading", "low_tensor_core"]
    # the diff: two unchanged findings, in the same order
    fs = [tc, data]
    assert [d.id for d in findings_delta(fs, fs)] == ["data_loading", "low_tensor_core"]
    # a bound-only finding whose discounted bound is bigger still leads: 0.71 × 60 = 42.6 > 32.5
    big = _f("low_tensor_core", 60.0, None, "compute")
    assert principal([data, big], None) == "compute"


def test_the_headline_is_the_top_claim_never_an_info_finding():
    info = _f("host_sync", 30.0, 0.2, "host overhead", "info")
    low = _f("pageable_memcpy", 2.0, None, "data", "low")
    assert principal([info, low], None) == "data"
    assert principal([info], None) is None  # no claim and nothing measured
