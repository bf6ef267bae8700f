"""The device record of a run: its name, kind, memory and the peak its MFU is measured against.

The peak comes from the one resolver (hardware/peaks.py): the user's `--peak-tflops` wins;
else the spec-table row that matches the device name (exactly one row, see
hardware/specs.py); else on CPU a measured matmul peak; else no peak at all (MFU is
reported as unknown, with a warning). Never a guess.
"""

from __future__ import annotations

from trainprof.backends.base import DeviceBackend
from trainprof.hardware import peak_dtype_for
from trainprof.hardware.peaks import PeakOverrides, resolve_peaks
from trainprof.records import DeviceInfo


def resolve_device_info(
    backend: DeviceBackend,
    dtype: str,
    overrides: PeakOverrides = PeakOverrides(),
    *,
    measure_cpu_peak: bool = True,
    warnings: list[str] | None = None,
) -> DeviceInfo:
    """`dtype` is the compute dtype of the run (fp32 | bf16 | fp16)."""
    warns = warnings if warnings is not None else []
    name = backend.device_name()
    column = peak_dtype_for(dtype, tf32_matmul=backend.tf32_matmul())
    measure = None
    if backend.kind == "cpu" and measure_cpu_peak:
        from trainprof.backends.cpu import measured_matmul_tflops

        measure = measured_matmul_tflops
    # a CPU's name is not looked up in the (GPU) spec table; its peak is measured
    peaks = resolve_peaks(None if backend.kind == "cpu" else name, overrides,
                          measure_tflops=measure, measure_dtypes=(column,))
    if peaks.hint is not None and overrides.peak_tflops is None:
        warns.append(f"no MFU/HFU reported: {peaks.hint}")
    common = dict(name=name, kind=backend.kind, peak_dtype=column, peak_bandwidth_gbs=peaks.bandwidth_gbs,
                  memory_total_bytes=backend.memory_total_bytes(),
                  spec_key=peaks.spec.key if peaks.spec else None)
    if peaks.origin == "user":
        return DeviceInfo(peak_tflops=overrides.peak_tflops, peak_source="user", **common)
    if peaks.origin == "datasheet":
        peak = peaks.tflops.get(column)
        if peak is None:
            warns.append(f"{peaks.spec.name} has no {column} peak in the spec table: no MFU/HFU")
        return DeviceInfo(peak_tflops=peak, peak_source="datasheet" if peak else "unknown", **common)
    if peaks.origin == "measured":
        return DeviceInfo(peak_tflops=peaks.tflops[column], peak_source="measured", **common)
    return DeviceInfo(peak_tflops=None, peak_source="unknown", **common)
