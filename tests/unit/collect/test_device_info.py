import pytest

from trainprof.backends.fake import FakeBackend
from trainprof.collect.device_info import resolve_device_info
from trainprof.hardware.peaks import PeakOverrides
from trainprof.errors import UsageError


def test_datasheet_peak_for_a_known_gpu():
    info = resolve_device_info(FakeBackend(name="NVIDIA H100 80GB HBM3"), "bf16")
    assert info.spec_key == "h100-sxm" and info.peak_source == "datasheet"
    assert info.peak_tflops == pytest.approx(989.4, rel=1e-3)
    assert info.peak_bandwidth_gbs == 3350


def test_fp32_with_tf32_uses_the_tf32_column():
    info = resolve_device_info(FakeBackend(name="NVIDIA A100-SXM4-80GB", tf32=True), "fp32")
    assert info.peak_dtype == "tf32" and info.peak_tflops == 156


def test_unknown_gpu_gets_no_peak_and_a_warning():
    warns: list[str] = []
    info = resolve_device_info(FakeBackend(name="NVIDIA RTX A6000"), "bf16", warnings=warns)
    assert info.peak_tflops is None and info.peak_source == "unknown"
    assert warns and "--peak-tflops" in warns[0]


def test_user_override_and_forced_row():
    info = resolve_device_info(FakeBackend(name="Mystery GPU"), "bf16", PeakOverrides(peak_tflops=100.0))
    assert (info.peak_tflops, info.peak_source) == (100.0, "user")
    info = resolve_device_info(FakeBackend(name="Mystery GPU"), "bf16", PeakOverrides(gpu_spec="a100-sxm4-80gb"))
    assert info.peak_tflops == 312
    with pytest.raises(UsageError, match="--gpu-spec"):
        resolve_device_info(FakeBackend(name="x"), "bf16", PeakOverrides(gpu_spec="nope"))


def test_dtype_missing_from_row_gives_no_mfu():
    warns: list[str] = []
    info = resolve_device_info(FakeBackend(name="Tesla V100-SXM2-32GB"), "bf16", warnings=warns)
    assert info.peak_tflops is None and warns


def test_cpu_peak_is_measured_for_real_with_its_provenance():
    # the real path once (the cache policy itself: tests/unit/backends/test_cpu_peak.py, injected);
    # whether it is cached depends on this machine's load, so only its record is checked here
    from trainprof.backends.cpu import CpuBackend

    info = resolve_device_info(CpuBackend(), "fp32")
    assert info.peak_source == "measured" and info.peak_tflops > 0
    pm = info.peak_measurement
    assert pm.source in ("measured", "cached, checked") and pm.value == info.peak_tflops
    assert pm.reference > 0 and pm.measured_at
