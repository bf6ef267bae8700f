"""`bench batch` and `bench scaling` end to end on the tiny preset (issue #41): each trains in
fresh `trainprof run` processes (scaling: torchrun ranks over gloo). No speed is asserted; what
is asserted is the shape and that the numbers agree with each other and with planted truths."""

from __future__ import annotations

import json

import pytest

from trainprof.cli import main

pytestmark = pytest.mark.slow  # fresh training processes and torchrun ranks: seconds each

TINY = ["--device", "cpu", "--seq-len", "32", "--threads", "1", "--steps", "3", "--warmup-steps", "1"]


def test_batch_sweep_stops_at_the_planners_limit(tmp_path, capsys):
    from trainprof.jobs.bench_batch import plan_limit, planned_bytes
    from trainprof.workload.config import TrainConfig

    out = tmp_path / "b"
    # plan at seq 32: 72.8 MiB up to micro-batch 8, 82.5 at 16, 117 at 32: a 100 MiB budget lets
    # 8 and 16 run and stops the sweep before 32 (the planner's largest: 24)
    assert main(["bench", "batch", *TINY, "--min-micro-batch", "8", "--memory-budget", "100M", "--out", str(out)]) == 0
    doc = json.loads((out / "bench.json").read_text())
    assert doc["kind"] == "batch" and doc["memory_budget_bytes"] == 100 * 2**20
    rows = doc["results"]
    assert [r["micro_batch"] for r in rows] == [8, 16]
    for r in rows:  # per token: the speed is the step's tokens over its time, the step is micro-batch × seq
        assert r["tokens_per_step"] == r["micro_batch"] * 32
        assert r["tokens_per_s"] == pytest.approx(r["tokens_per_step"] / r["step_time_s"], rel=1e-6)
        assert r["planned_bytes"] <= doc["memory_budget_bytes"] and "--micro-batch" in r["command"]
    cfg = TrainConfig(device="cpu", dtype="fp32", seq_len=32, threads=1, micro_batch=8).resolved()
    assert doc["plan_limit"] == plan_limit(cfg, "cpu", 100 * 2**20) and 16 <= doc["plan_limit"] < 32
    stop = doc["stop"]
    assert stop["by"] == "plan" and stop["micro_batch"] == 32 and stop["planned_bytes"] > doc["memory_budget_bytes"]
    assert stop["planned_bytes"] == planned_bytes(TrainConfig(**{**cfg.to_dict(), "micro_batch": 32}), "cpu")
    assert doc["best"]["tokens_per_s"] == max(r["tokens_per_s"] for r in rows)
    printed = capsys.readouterr().out
    assert "micro-batch" in printed and "stopped: micro-batch 32" in printed
    # the report: the rows as a table and the sweep's chart
    assert main(["report", str(out), "--format", "html"]) == 0
    html = (out / "report.html").read_text()
    assert 'id="chart-bench-batch"' in html and "stopped: micro-batch 32" in html


def test_scaling_one_and_two_ranks_efficiency_and_no_sync(tmp_path):
    out = tmp_path / "s"
    # --grad-accum 2 under DDP: no_sync on the first micro-batch of each step, so the gradients are
    # all-reduced once a step: 4 B × params (fp32), the planted truth, not twice that
    assert main(["bench", "scaling", *TINY, "--micro-batch", "2", "--grad-accum", "2", "--nproc", "2",
                 "--profile-steps", "1", "--out", str(out)]) == 0
    doc = json.loads((out / "bench.json").read_text())
    one, two = doc["results"]
    assert (one["nproc"], two["nproc"]) == (1, 2) and doc["threads_per_rank"] == 1  # 1 added: the reference
    assert one["tokens_per_step"] == two["tokens_per_step"] == 2 * 2 * 32  # weak scaling: the same per rank
    # efficiency recomputed from the table's own numbers
    assert one["efficiency"] == pytest.approx(1.0)
    assert two["efficiency"] == pytest.approx(two["job_tokens_per_s"] / (2 * one["job_tokens_per_s"]))
    assert two["job_tokens_per_s"] == pytest.approx(2 * two["rank_tokens_per_s"])
    assert two["efficiency"] == pytest.approx(one["step_time_s"] / two["step_time_s"], rel=1e-6)
    assert two["lost_s"] == pytest.approx(two["step_time_s"] - one["step_time_s"])
    assert 0 < two["exposed_share"] <= two["comm_share"] <= 1 and one["comm_share"] == 0
    assert two["allreduce_bytes_per_step"] == 4 * doc["params"]
    assert two["collectives_per_step"] >= 2  # the gradient buckets and the loss's mean
    assert "--nproc 2" in two["command"] and "--nproc" not in one["command"]
