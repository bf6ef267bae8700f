"""GPU sensors through NVML (the library under nvidia-smi and DCGM), via `nvidia-ml-py`.

Per GPU and sample: utilisation (% of the interval a kernel ran: coarse, a GPU running one
tiny kernel all the time reads 100%), memory-controller utilisation, SM clock, memory used,
power and temperature, and the board's energy counter (Volta and newer) as a cross-check of
the integrated power.

Units as NVML gives them, converted once here: power mW → W (averaged over 1 s on Ampere
and newer except GA100, instantaneous before; NVML docs, nvmlDeviceGetPowerUsage), energy
mJ → J (since the driver loaded; nvmlDeviceGetTotalEnergyConsumption), memory bytes.
A field a GPU does not support is left out of that GPU's sample, not set to zero.
"""

from __future__ import annotations

from typing import Any


class NvmlSensor:
    name = "nvml"

    def __init__(self, visible: list[int] | None = None) -> None:
        self.reason: str | None = None
        self._handles: list[tuple[int, Any]] = []
        try:
            import pynvml
        except ImportError:
            self.reason = "nvidia-ml-py is not installed (pip install 'trainprof[gpu]')"
            return
        self._nv = pynvml
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            indices = [i for i in (visible if visible is not None else range(count)) if i < count]
            self._handles = [(i, pynvml.nvmlDeviceGetHandleByIndex(i)) for i in indices]
        except pynvml.NVMLError as e:
            self.reason = f"NVML unavailable: {e}"
            return
        if not self._handles:
            self.reason = "NVML sees no GPU"

    def read(self) -> dict[str, Any]:
        nv = self._nv if self._handles else None
        gpus = []
        for index, h in self._handles:
            g: dict[str, Any] = {"index": index}
            _try(g, "util_pct", lambda h=h: nv.nvmlDeviceGetUtilizationRates(h).gpu)
            _try(g, "mem_util_pct", lambda h=h: nv.nvmlDeviceGetUtilizationRates(h).memory)
            _try(g, "sm_clock_mhz", lambda h=h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
            _try(g, "mem_used_bytes", lambda h=h: nv.nvmlDeviceGetMemoryInfo(h).used)
            _try(g, "power_w", lambda h=h: nv.nvmlDeviceGetPowerUsage(h) / 1e3)
            _try(g, "temp_c", lambda h=h: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
            _try(g, "energy_j", lambda h=h: nv.nvmlDeviceGetTotalEnergyConsumption(h) / 1e3)
            gpus.append(g)
        return {"gpus": gpus} if gpus else {}


def _try(out: dict[str, Any], key: str, fn: Any) -> None:
    import pynvml

    try:
        out[key] = fn()
    except pynvml.NVMLError:  # NOT_SUPPORTED on this board, or a transient failure
        pass
