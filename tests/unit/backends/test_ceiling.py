"""The measured matmul ceiling's cache (backends/ceiling.py): fresh is used, stale never."""

from trainprof.backends import ceiling


def test_fresh_ceiling_is_read_and_stale_or_other_torch_is_not(tmp_path):
    p = tmp_path / "c.json"
    ceiling.record("NVIDIA H200", "bf16", 791.3, "2.5.0", now="2026-11-01T00:00:00+00:00", path=p)
    got = ceiling.lookup("NVIDIA H200", "bf16", "2.5.0", now="2026-11-28T00:00:00+00:00", path=p)
    assert got["tflops"] == 791.3
    old = ceiling.lookup("NVIDIA H200", "bf16", "2.5.0", now="2027-03-01T00:00:00+00:00", path=p)  # 120 days
    assert old["tflops"] is None and "stale" in old["why"]
    other = ceiling.lookup("NVIDIA H200", "bf16", "2.6.0", now="2026-11-02T00:00:00+00:00", path=p)
    assert other["tflops"] is None and "bench matmul" in other["why"]
    none = ceiling.lookup("NVIDIA H200", "fp16", "2.5.0", path=p)
    assert none["tflops"] is None and "bench matmul" in none["why"]
