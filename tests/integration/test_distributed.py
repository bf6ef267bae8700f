"""2-rank gloo jobs on CPU through torchrun: DDP and FSDP."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trainprof.cli import main

pytestmark = pytest.mark.slow  # trains the workload in fresh processes: seconds to minutes each

ARGS = ["--steps", "4", "--seq-len", "32", "--eval-batches", "1", "--device", "cpu"]


def _run(tmp_path, name: str, *extra: str) -> dict:
    out = tmp_path / name
    r = subprocess.run([sys.executable, "-m", "trainprof", "run", *ARGS, *extra, "--out", str(out), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads((out / "run.json").read_text())


def test_ddp_matches_one_process_with_the_same_global_batch(tmp_path):
    single = _run(tmp_path, "single", "--micro-batch", "4")
    ddp = _run(tmp_path, "ddp", "--micro-batch", "2", "--nproc", "2", "--strategy", "ddp")
    assert ddp["world_size"] == 2 and ddp["distributed"]["strategy"] == "ddp"
    assert ddp["distributed"]["backend"] == "gloo" and len(ddp["distributed"]["per_rank"]) == 2
    assert ddp["distributed"]["global_batch_tokens"] == single["summary"]["tokens_per_step"]
    a = [s["loss"] for s in single["steps"]]
    b = [s["loss"] for s in ddp["steps"]]
    assert b == pytest.approx(a, rel=1e-4)  # same global batches, gradients averaged
    assert ddp["summary"]["val_loss"] == pytest.approx(single["summary"]["val_loss"], rel=1e-4)
    assert b[-1] < b[0] - 1.0


def test_fsdp_learns(tmp_path):
    d = _run(tmp_path, "fsdp", "--micro-batch", "2", "--nproc", "2", "--strategy", "fsdp")
    assert d["distributed"]["strategy"] == "fsdp" and d["world_size"] == 2
    losses = [s["loss"] for s in d["steps"]]
    assert losses[-1] < losses[0] - 1.0
    assert d["distributed"]["straggler_rank"] in (0, 1)


def test_distributed_bad_input_fails_fast(tmp_path, capsys):
    assert main(["run", "--nproc", "2", "--data", str(tmp_path / "none"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--data" in err
    assert main(["run", "--nproc", "0"]) == 2
    assert main(["run", "--strategy", "zero3"]) == 2


def test_profile_on_two_ranks_writes_rank_traces_and_matches_collectives(tmp_path):
    # every rank profiles the same extra steps; rank 0 gathers traces/rankR.json.gz and
    # analyses them as a job (docs/collectives.md)
    out = tmp_path / "prof"
    r = subprocess.run([sys.executable, "-m", "trainprof", "run", *ARGS, "--nproc", "2", "--steps", "3",
                        "--profile", "--no-report", "--out", str(out), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(p.name for p in (out / "traces").iterdir()) == ["rank0.json.gz", "rank1.json.gz"]
    assert not (tmp_path / ".prof.rank-traces").exists()
    a = json.loads((out / "analysis.json").read_text())
    assert [x["file"] for x in a["ranks"]] == ["traces/rank0.json.gz", "traces/rank1.json.gz"]
    job = a["multi_rank"]["collectives"]
    assert job["consistent"] and job["matched"] > 0
    # DDP's gradient all-reduces, sized from the recorded shapes
    ar = [g for g in job["groups"] if g["op"] == "all_reduce"]
    assert ar and ar[0]["bytes"] > 0 and ar[0]["median_busbw_gbs"] > 0
