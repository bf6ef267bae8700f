"""Findings on real traces and on problems planted in the reference workload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainprof.jobs.analyze import analyze_paths
from trainprof.cli import main

from tests.plain import plain

pytestmark = pytest.mark.slow  # trains the workload in fresh processes: seconds to minutes each

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "data" / "traces" / "real"
FAST = ["--eval-batches", "1", "--device", "cpu", "--warmup-steps", "1"]


def _top_or_contended(findings: list[dict], planted: str) -> dict:
    """The planted problem's finding, which must rank first — or, when trainprof itself flagged
    the run as measured on a shared machine (`contended_machine`), at least be found: with a
    few timed steps under load 3-4 on 2 cores another phase can look larger (these tests
    failed that way under other test suites and passed alone)."""
    ids = [x["id"] for x in findings]
    assert planted in ids, ids
    assert ids[0] == planted or "contended_machine" in ids, ids
    return findings[ids.index(planted)]


def _run_planted(tmp_path: Path, args: list[str], planted: str, tries: int = 3) -> Path:
    """Run the workload with a planted problem until its finding is found; a retry only where
    trainprof itself flagged the run `contended_machine`. With 3-5 timed steps of a few ms on 2
    shared cores, other engineers' work made the phase medians swing (seen: the for-loop
    optimizer at 53% of the mean step and 9.8% of the median one), so one unlucky run may fall
    under the rule's threshold; a quiet run, or any of `tries` contended ones, must find it."""
    for i in range(tries):
        out = tmp_path / f"try{i}"
        assert main([*args, "--out", str(out)]) == 0
        ids = [x["id"] for x in json.loads((out / "run.json").read_text())["findings"]]
        if planted in ids or "contended_machine" not in ids:
            return out
    return out


def _findings(path: Path) -> list[dict]:
    return plain(analyze_paths([str(path)], jobs=1).ranks[0].findings)


def test_host_sync_trace_reports_the_real_item_count():
    fs = {f["id"]: f for f in _findings(REAL / "hta_16rank_nccl_a100_hostsync" / "rank0.json.gz")}
    assert "945 aten::item" in fs["host_sync"]["evidence"]
    assert "75 cudaStreamSynchronize" in fs["host_sync"]["evidence"]


def test_dataloader_trace_top_finding_is_data_loading():
    fs = _findings(REAL / "param_resnet_rtx2080ti_dataloader" / "resnet_kineto.json.gz")
    assert fs[0]["id"] == "data_loading" and fs[0]["bottleneck"] == "data"
    assert "pageable_memcpy" in [f["id"] for f in fs]  # its HtoD copies are from pageable memory


def test_ddp_trace_reports_exposed_communication():
    f = {x["id"]: x for x in _findings(REAL / "hta_ddp_2rank_nccl_v100/df_index_resolver.json.gz")}["exposed_communication"]
    assert f["bottleneck"] == "communication" and f["estimated_gain_pct"] > 5


def test_exposed_communication_is_the_breakdowns_communication():
    # Issue #39 item 7: one definition. The A100 DDP trace showed "39.6 ms exposed" (every
    # step's work) beside "communication 20.7 ms" (the breakdown's window); now both are the
    # breakdown's 20.7 ms, 4.75% of its span: below the rule's 5%, so no finding (it was a
    # 6.0% share of another window, projected 0.0%: info).
    from trainprof.analysis import trace_report
    from trainprof.trace import read_trace
    from tests.plain import plain

    a = plain(trace_report.analyze_trace(read_trace(str(REAL / "hta_ddp_2rank_nccl_a100/nccl_data.json.gz")), file="a"))
    tb, c = a["temporal_breakdown"], a["communication"]
    assert c["exposed_us"] == pytest.approx(tb["communication_us"], rel=1e-9)
    assert c["steps_union_us"] > c["union_us"]  # the whole trace's collectives, for the cross-rank table
    assert tb["communication_pct"] < 5.0
    assert "exposed_communication" not in {x["id"] for x in _findings(REAL / "hta_ddp_2rank_nccl_a100/nccl_data.json.gz")}


def test_planted_slow_dataloader_is_the_top_finding(tmp_path):
    out = _run_planted(tmp_path, ["run", "--steps", "4", "--micro-batch", "2", "--seq-len", "32",
                                  "--data-delay-ms", "200", *FAST], "data_loading")
    f = json.loads((out / "run.json").read_text())["findings"]
    assert _top_or_contended(f, "data_loading")["estimated_gain_pct"] > 5


def test_planted_forloop_optimizer_is_the_top_finding_with_profile(tmp_path):
    out = _run_planted(tmp_path, ["run", "--steps", "4", "--micro-batch", "1", "--seq-len", "16",
                                  "--optimizer", "forloop", "--profile", *FAST], "optimizer_bound")
    a = json.loads((out / "analysis.json").read_text())["ranks"][0]
    run = json.loads((out / "run.json").read_text())
    _top_or_contended(a["findings"], "optimizer_bound")
    assert run["findings"] == a["findings"]
    # the headline is the top claim's class (issue #39: it never contradicts the list under it)
    claims = [f for f in a["findings"] if f["severity"] != "info"]
    if claims:
        assert a["bottleneck"] == claims[0]["bottleneck"]
        return
    # without one, the largest class of the measured split, whichever wins on this machine.
    # Each phase counts at its mean share, or
    # at its median's where a few slow steps drive the mean (docs/rules.md, noise): 3 measured
    # steps (4, 1 warm-up) are enough for run.json's summary.phase_split to mark one under load
    split = run["summary"]["phase_split"]

    def share(k: str) -> float:
        return split[k]["median_share_pct"] if split[k]["outlier_driven"] else split[k]["mean_share_pct"]

    classes = {"compute": share("forward_s") + share("backward_s"),
               "host overhead": share("optimizer_s") + share("other_s"), "data": share("data_s") + share("h2d_s")}
    assert a["bottleneck"] == max(classes, key=lambda k: (classes[k], k == "compute"))  # a tie goes to compute


def test_healthy_default_shape_has_no_high_finding(tmp_path):
    out = tmp_path / "ok"
    assert main(["run", "--steps", "3", "--micro-batch", "8", "--seq-len", "128", *FAST, "--out", str(out)]) == 0
    f = json.loads((out / "run.json").read_text())["findings"]
    high = [x["id"] for x in f if x["severity"] == "high"]
    # A healthy shape earns no high finding — unless trainprof itself saw the machine shared
    # (`contended_machine`: other processes' CPU, load, step-time spread), where 3 timed steps
    # can make any phase look slow; the caveat is what a user then sees first. (Under other
    # engineers' test suites, load 3-4 on 2 cores, this test failed and passed alone.)
    assert not high or "contended_machine" in {x["id"] for x in f}, high
