"""`bench batch` stops at the first out-of-memory on a GPU (a scripted measurement: no training)."""

from __future__ import annotations

from types import SimpleNamespace

from trainprof.bench.workload_config import BatchSweepConfig
from trainprof.jobs import bench_batch


def test_sweep_stops_at_the_first_oom(monkeypatch):
    def fake(cfg, timeout_s):  # noqa: ANN001
        b = cfg.micro_batch
        if b >= 8:
            return {"status": "oom", "reason": f"--micro-batch {b} does not fit in cuda memory"}, 1.0
        step = 0.01 * b ** 0.5
        return {"status": "ok", "tokens_per_step": b * 64, "step_time_s": step, "step_time_median_s": step,
                "tokens_per_s": b * 64 / step, "mfu": 0.5, "peak_memory_bytes": b << 20,
                "peak_memory_kind": "cuda_allocator", "measured_steps": 5}, 1.0

    monkeypatch.setattr(bench_batch, "measure", fake)
    monkeypatch.setattr("trainprof.workload.setup.resolve_dtype", lambda cfg, dev: "bf16")
    out = bench_batch.run(BatchSweepConfig(min_micro_batch=2).resolved("cuda"), SimpleNamespace(kind="cuda",
                                                                                                device="cuda:0"))
    assert [r["micro_batch"] for r in out["results"]] == [2, 4]  # powers of two from the first
    assert out["stop"]["by"] == "oom" and out["stop"]["micro_batch"] == 8 and "did not fit" in out["stop"]["reason"]
    assert out["best"]["micro_batch"] == 4 and out["plan_limit"] is None  # a GPU runs until it fails
    assert all("trainprof run" in r["command"] and f"--micro-batch {r['micro_batch']}" in r["command"]
               for r in out["results"])
