"""The device record of a run: its name, kind, memory and the peak its MFU is measured against.

The peak comes from the one resolver (hardware/peaks.py): the user's `--peak-tflops` wins;
else the spec-table row that matches the device name (exactly one row, see
hardware/specs.py); else on CPU a measured matmul peak; else no peak at all (MFU is
reported as unknown, with a warning). Never a guess. A measured CPU peak carries its
provenance (source, date, the load it was measured under: backends/cpu_peak.py) into run.json.
"""

from __future__ import annotations

from typing import Any

import msgspec

from trainprof.backends.base import DeviceBackend
from trainprof.hardware import peak_dtype_for
from trainprof.hardware.peaks import PeakOverrides, resolve_peaks
from trainprof.recordtypes.run import DeviceInfo
from trainprof.recordtypes.run_parts import PeakMeasurement


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
    taken: dict[str, Any] = {}  # dtype -> backends.cpu_peak.Measurement
    if backend.kind == "cpu" and measure_cpu_peak:
        from trainprof.backends.cpu import matmul_peak

        def measure(d: str) -> float:
            taken[d] = matmul_peak(d)
            return taken[d].value
    # a CPU's name is not looked up in the (GPU) spec table; its peak is measured, and a 16-bit
    # run's fp32 peak too: a CPU without native bf16 matmuls does them slower than fp32
    peaks = resolve_peaks(None if backend.kind == "cpu" else name, overrides,
                          measure_tflops=measure, measure_dtypes=tuple(dict.fromkeys((column, "fp32"))))
    if peaks.hint is not None and overrides.peak_tflops is None:
        warns.append(f"no MFU/HFU reported: {peaks.hint}")
    common = dict(name=name, kind=backend.kind, peak_dtype=column, peak_bandwidth_gbs=peaks.bandwidth_gbs,
                  memory_total_bytes=backend.memory_total_bytes(),
                  spec_key=peaks.spec.key if peaks.spec else None, peak_measurement=None)
    if peaks.origin == "user":
        return DeviceInfo(peak_tflops=overrides.peak_tflops, peak_source="user", **common)
    if peaks.origin == "datasheet":
        peak = peaks.tflops.get(column)
        if peak is None:
            warns.append(f"{peaks.spec.name} has no {column} peak in the spec table: no MFU/HFU")
        return DeviceInfo(peak_tflops=peak, peak_source="datasheet" if peak else "unknown", **common)
    if peaks.origin == "measured":
        return _measured(peaks.tflops, column, taken, common, warns)
    return DeviceInfo(peak_tflops=None, peak_source="unknown", **common)


def _measured(tflops: dict[str, float], column: str, taken: dict[str, Any], common: dict, warns: list[str]) -> DeviceInfo:
    """A CPU's measured peak with its provenance. A 16-bit peak below the fp32 one means no native
    16-bit matmul here (emulated through fp32): MFU is then against the fp32 peak, said so, since
    the same math runs faster in fp32 and a slow emulated "peak" would make any run look efficient."""
    use = column
    fp32 = tflops.get("fp32")
    if column in ("bf16", "fp16") and fp32 and tflops[column] < fp32:
        use = "fp32"
        warns.append(f"no native {column} matmul on this CPU ({column} {tflops[column]:.3g} < fp32 {fp32:.3g} "
                     f"TFLOP/s measured): MFU is against the fp32 peak")
    m = taken[use]
    if m.others_cpu_share is not None and m.source == "measured" and not m.cached:
        warns.append(f"the CPU peak was measured while other processes used {m.others_cpu_share:.2f} of each "
                     f"core: it may read low and MFU high ({m.note or 'not cached'})")
    record = {**m.to_dict(), "tflops_by_dtype": {d: x.value for d, x in taken.items()},
              "no_native_matmul": column if use != column else None}
    return DeviceInfo(peak_tflops=tflops[use], peak_source="measured",
                      **{**common, "peak_dtype": use, "peak_measurement": msgspec.convert(record, PeakMeasurement)})
