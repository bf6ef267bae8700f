"""`trainprof whatif` end to end on real traces; bad input is one line and exit code 2."""

import json
from pathlib import Path

import pytest

from trainprof.cli import main

REAL = Path(__file__).resolve().parents[1] / "data" / "traces" / "real"
DDP = REAL / "hta_ddp_2rank_nccl_a100" / "nccl_data.json.gz"


def test_whatif_json_schema_and_monotone_edits(capsys):
    assert main(["whatif", str(DDP), "--remove", "launch_overhead", "--scale", "cudnn=0.5", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["schema"] == "trainprof.whatif/1" and r["steps_in_trace"] == 3
    (s,) = r["scenarios"]
    assert [e["op"] for e in s["edits"]] == ["remove", "scale"] and s["edits"][1]["factor"] == 0.5
    assert s["edges_changed"] > 0
    # removing work and halving kernels can only make every step shorter or equal
    for row in s["steps"]:
        assert row["projected_us"] <= row["measured_us"] + 1e-6
        assert row["critical_path_before"]["length_us"] == pytest.approx(row["measured_us"], rel=1e-9)
        assert row["critical_path_after"]["length_us"] == pytest.approx(row["projected_us"], rel=1e-9)
    assert s["speedup"] == pytest.approx(s["measured_step_us"] / s["projected_step_us"], rel=1e-3)


def test_whatif_without_edits_shows_each_cause(capsys):
    assert main(["whatif", str(DDP), "--step", "5"]) == 0
    out = capsys.readouterr().out
    for label in ("remove data_loading", "remove host_sync", "remove exposed_comm", "remove launch_overhead",
                  "remove allocator"):
        assert label in out
    assert main(["whatif", str(DDP), "--step", "5", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert [len(s["steps"]) for s in r["scenarios"]] == [1, 1, 1, 1, 1]
    for s in r["scenarios"]:  # each scenario carries its claims: physics floor, bound, no violation
        assert s["violations"] == [] and s["projected_step_us"] >= s["floor_us"]
        assert s["gain_pct"] <= s["bound_pct"] + 1e-6


@pytest.mark.parametrize("argv, message", [
    (["--remove", "gpu"], "--remove gpu: must be one of"),
    (["--scale", "gemm"], "--scale 'gemm': expected PATTERN=FACTOR"),
    (["--step", "99"], "--step 99: no such step in the trace (steps: 4, 5, 6)"),
    (["--top", "0"], "top.k (--top) must be ≥ 1, got 0"),
])
def test_bad_flags(capsys, argv, message):
    assert main(["whatif", str(DDP), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_missing_trace(capsys, tmp_path):
    assert main(["whatif", str(tmp_path / "nope.json")]) == 2
    assert "nope.json" in capsys.readouterr().err
