"""Decide which peak a run is measured against: datasheet row, user override, or measured.

Order: the user's `--peak-tflops` wins; else the spec-table row that matches the device
name (exactly one row, see hardware/specs.py); else on CPU a measured matmul peak; else
no peak at all (MFU is reported as unknown, with a warning). Never a guess.
"""

from __future__ import annotations

from trainprof.backends.base import DeviceBackend
from trainprof.hardware import load_specs, peak_dtype_for
from trainprof.hardware.specs import unknown_key_message, unmatched_device_message
from trainprof.records import DeviceInfo


def resolve_device_info(
    backend: DeviceBackend,
    dtype: str,
    *,
    peak_tflops: float | None = None,
    peak_bandwidth_gbs: float | None = None,
    spec_key: str | None = None,
    measure_cpu_peak: bool = True,
    warnings: list[str] | None = None,
) -> DeviceInfo:
    """`dtype` is the compute dtype of the run (fp32 | bf16 | fp16)."""
    warns = warnings if warnings is not None else []
    name = backend.device_name()
    column = peak_dtype_for(dtype, tf32_matmul=backend.tf32_matmul())
    spec = None
    if spec_key is not None:
        spec = load_specs().get(spec_key)
        if spec is None:
            from trainprof.errors import UsageError

            raise UsageError(unknown_key_message(spec_key))
    elif backend.kind != "cpu":
        table = load_specs()
        spec = table.match(name)
        if spec is None and peak_tflops is None:
            warns.append(f"no MFU/HFU reported: {unmatched_device_message(name)}")
    bandwidth = peak_bandwidth_gbs if peak_bandwidth_gbs is not None else (
        spec.bandwidth_gbs if spec else None
    )
    common = dict(
        name=name,
        kind=backend.kind,
        peak_dtype=column,
        peak_bandwidth_gbs=bandwidth,
        memory_total_bytes=backend.memory_total_bytes(),
    )
    if peak_tflops is not None:
        return DeviceInfo(spec_key=spec.key if spec else None, peak_tflops=peak_tflops,
                          peak_source="user", **common)
    if spec is not None:
        peak = spec.peak_tflops(column)
        if peak is None:
            warns.append(f"{spec.name} has no {column} peak in the spec table: no MFU/HFU")
        return DeviceInfo(spec_key=spec.key, peak_tflops=peak,
                          peak_source="datasheet" if peak else "unknown", **common)
    if backend.kind == "cpu" and measure_cpu_peak:
        from trainprof.backends.cpu import measured_matmul_tflops

        return DeviceInfo(spec_key=None, peak_tflops=measured_matmul_tflops(column),
                          peak_source="measured", **common)
    return DeviceInfo(spec_key=None, peak_tflops=None, peak_source="unknown", **common)
