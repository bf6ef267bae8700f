"""One peak resolver for run and analyze (hardware/peaks.py)."""

import pytest

from trainprof.jobs.analyze import resolve_roof
from trainprof.collect.device_info import resolve_device_info
from trainprof.backends.fake import FakeBackend
from trainprof.errors import UsageError
from trainprof.hardware.peaks import PeakOverrides, resolve_peaks


def test_datasheet_row_by_name_then_overrides():
    p = resolve_peaks("NVIDIA H100 80GB HBM3", PeakOverrides())
    assert p.origin == "datasheet" and p.spec.key == "h100-sxm" and p.tflops["bf16"] == 989.4
    # --peak-tflops replaces every dtype's peak; the row still gives the bandwidth
    p = resolve_peaks("NVIDIA H100 80GB HBM3", PeakOverrides(peak_tflops=500.0))
    assert p.origin == "user" and set(p.tflops.values()) == {500.0} and p.bandwidth_gbs == 3350.0


def test_unknown_gpu_has_no_peak_and_says_why():
    p = resolve_peaks("Mystery GPU", PeakOverrides())
    assert p.origin == "unknown" and p.tflops == {} and "Mystery GPU" in p.hint
    with pytest.raises(UsageError, match="nope"):
        resolve_peaks("Mystery GPU", PeakOverrides(gpu_spec="nope"))


def test_cpu_measures_only_what_is_not_overridden():
    calls = []

    def measure(d):
        calls.append(d)
        return 1.5

    p = resolve_peaks(None, PeakOverrides(), measure_tflops=measure, measure_bandwidth=lambda: 20.0)
    assert (p.origin, p.tflops, p.bandwidth_gbs, calls) == ("measured", {"fp32": 1.5, "bf16": 1.5}, 20.0, ["fp32", "bf16"])
    calls.clear()
    p = resolve_peaks(None, PeakOverrides(peak_tflops=3.0, peak_bandwidth_gbs=9.0), measure_tflops=measure,
                      measure_bandwidth=lambda: 1 / 0)
    assert (p.origin, p.tflops, p.bandwidth_gbs, calls) == ("user", {"fp32": 3.0, "bf16": 3.0}, 9.0, [])


def test_run_and_analyze_agree_on_one_device():
    # the same override reaches MFU (device record) and the roofline (roofs) identically
    o = PeakOverrides(peak_tflops=123.0, peak_bandwidth_gbs=456.0)
    info = resolve_device_info(FakeBackend(name="NVIDIA H100 80GB HBM3"), "bf16", o)
    roof = resolve_roof("NVIDIA H100 80GB HBM3", o)
    assert info.peak_tflops == roof.peak_tflops["bf16"] == 123.0
    assert info.peak_bandwidth_gbs == roof.bandwidth_gbs == 456.0
    assert info.spec_key == "h100-sxm" and roof.source == "user+user bandwidth"


@pytest.mark.parametrize("kw, msg", [({"peak_tflops": 0.0}, "peaks.peak_tflops must be a finite number > 0, got 0.0"),
                                     ({"peak_bandwidth_gbs": float("inf")}, "peaks.peak_bandwidth_gbs must be")])
def test_validation_names_the_field(kw, msg):
    with pytest.raises(UsageError, match=msg):  # on construction; a command line adds the flag (test_flags.py)
        PeakOverrides(**kw)
