"""Real-GPU checks (marked `gpu`; skipped without CUDA). Results go to docs/gpu-validation.md."""

import json

import pytest

from trainprof.cli import main

pytestmark = pytest.mark.gpu


def test_gpt2_124m_bf16_mfu_on_a_listed_gpu(tmp_path):
    out = tmp_path / "gpu"
    assert main(["run", "--preset", "gpt2-124m", "--device", "cuda", "--dtype", "bf16",
                 "--steps", "12", "--eval-batches", "1", "--out", str(out)]) == 0
    d = json.loads((out / "run.json").read_text())
    assert d["device"]["kind"] == "cuda"
    s = d["summary"]
    assert s["peak_memory_kind"] == "cuda_allocator" and s["peak_memory_bytes"] > 0
    if d["device"]["peak_tflops"] is not None:
        assert 0.01 < s["mfu"] < 0.9  # a real, plausible fraction of a datasheet peak
    phases = sum(s[k] for k in ("data_s", "h2d_s", "forward_s", "backward_s", "optimizer_s", "other_s"))
    assert phases == pytest.approx(s["step_time_s"], rel=0.05)


def test_cuda_oom_is_a_clean_error(tmp_path, capsys):
    rc = main(["run", "--preset", "gpt2-774m", "--device", "cuda", "--micro-batch", "4096",
               "--steps", "1", "--warmup-steps", "0", "--out", str(tmp_path / "oom")])
    assert rc == 2 and "--micro-batch 4096" in capsys.readouterr().err
    assert not (tmp_path / "oom").exists()


def test_system_sampler_nvtx_and_memory_snapshot_on_a_gpu(tmp_path):
    """GPU power/energy from NVML, the nsys capture path without nsys attached (a no-op
    range), and the allocation snapshot with memory by category."""
    out = tmp_path / "snap"
    assert main(["run", "--preset", "gpt2-124m", "--device", "cuda", "--steps", "8", "--eval-batches", "1",
                 "--system-interval", "0.2", "--memory-snapshot", "2", "--nsys-capture", "--profile-steps", "1",
                 "--out", str(out)]) == 0
    d = json.loads((out / "run.json").read_text())
    e = d["system"]["summary"]["energy"]
    gpus = d["system"]["summary"]["gpus"]
    if "nvml" not in d["system"]["unavailable"]:
        assert gpus and gpus[0]["power_w_mean"] > 20
        assert e["gpu_j"] > 0 and e["gpu_j_per_token"] > 0
        if "gpu_power_integral_j" in e:  # the board counter is the figure; the integral cross-checks it
            assert e["gpu_source"] == "NVML board energy counter" and e["gpu_j"] == e["gpu_counter_j"]
            if "gpu_note" not in e:  # a window of ≥ 4 sampling intervals: the two agree roughly
                assert e["gpu_power_integral_j"] == pytest.approx(e["gpu_j"], rel=0.5)
    snap = d["memory_snapshot"]
    assert (out / "memory_snapshot.pickle").stat().st_size > 1000
    params = d["model"]["params"]
    assert snap["categories"]["at_peak"]["parameters"] >= 4 * params * 0.99
    assert snap["fragmentation"]["reserved_bytes"] >= snap["fragmentation"]["allocated_bytes"] > 0
