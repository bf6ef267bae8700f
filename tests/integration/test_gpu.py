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
               "--steps", "1", "--out", str(tmp_path / "oom")])
    assert rc == 2 and "--micro-batch 4096" in capsys.readouterr().err
    assert not (tmp_path / "oom").exists()
