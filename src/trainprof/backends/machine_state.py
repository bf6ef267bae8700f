"""The machine's own state that can cost speed (seed 003, 4.1.3-4.1.4): the CPU frequency
governor and clocks (Linux cpufreq sysfs), and per GPU the persistence mode, the application
(locked) SM clock against the maximum, and the current clock-throttle reasons (NVML).

Read once, after the measured steps (the throttle reasons then describe the steady state, not
the idle start). Every reader is injectable (`root` for sysfs, `nv` for the NVML module) so
tests script the values; a field the machine does not expose is left out, never guessed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# nvmlClocksThrottleReason* bits (nvml.h) that lower the clock below what the load asks for.
# GpuIdle (0x1) and SyncBoost (0x10) are not costs: the GPU is idle, or matched to its peers.
COSTLY_THROTTLE = {0x2: "applications clocks setting", 0x4: "software power cap", 0x8: "hardware slowdown",
                   0x20: "software thermal slowdown", 0x40: "hardware thermal slowdown",
                   0x80: "hardware power brake"}


def read_cpu(root: str | Path = "/") -> dict[str, Any]:
    """{"governors": {name: cores}, "cur_mhz_mean", "max_mhz"} from cpufreq; {} without it (a VM
    or container often has no cpufreq: then nothing is claimed)."""
    base = Path(root) / "sys/devices/system/cpu"
    govs: dict[str, int] = {}
    cur, mx = [], []
    for d in sorted(base.glob("cpu[0-9]*/cpufreq")):
        g = _text(d / "scaling_governor")
        if g:
            govs[g] = govs.get(g, 0) + 1
        c, m = _int(d / "scaling_cur_freq"), _int(d / "cpuinfo_max_freq")
        if c and m:  # kHz
            cur.append(c / 1e3)
            mx.append(m / 1e3)
    out: dict[str, Any] = {}
    if govs:
        out["governors"] = govs
    if cur:
        out["cur_mhz_mean"] = round(sum(cur) / len(cur), 1)
        out["max_mhz"] = round(max(mx), 1)
    return out


def read_gpus(nv: Any = None, indices: list[int] | None = None) -> list[dict[str, Any]]:
    """Per GPU: persistence (bool), app_sm_mhz, max_sm_mhz, throttle (the costly reasons now)."""
    if nv is None:
        try:
            import pynvml as nv
            nv.nvmlInit()
        except Exception:  # no NVML library or no driver: nothing to read
            return []
    out = []
    try:
        count = nv.nvmlDeviceGetCount()
    except nv.NVMLError:
        return []
    for i in (indices if indices is not None else range(count)):
        if i >= count:
            continue
        h = nv.nvmlDeviceGetHandleByIndex(i)
        g: dict[str, Any] = {"index": i}
        _try(nv, g, "persistence", lambda h=h: nv.nvmlDeviceGetPersistenceMode(h) == nv.NVML_FEATURE_ENABLED)
        _try(nv, g, "app_sm_mhz", lambda h=h: nv.nvmlDeviceGetApplicationsClock(h, nv.NVML_CLOCK_SM))
        _try(nv, g, "max_sm_mhz", lambda h=h: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM))
        _try(nv, g, "throttle", lambda h=h: [name for bit, name in COSTLY_THROTTLE.items()
                                             if nv.nvmlDeviceGetCurrentClocksThrottleReasons(h) & bit])
        out.append(g)
    return out


def _try(nv: Any, out: dict[str, Any], key: str, fn: Any) -> None:
    try:
        out[key] = fn()
    except nv.NVMLError:  # NOT_SUPPORTED on this board
        pass


def _text(p: Path) -> str | None:
    try:
        return p.read_text().strip() or None
    except OSError:
        return None


def _int(p: Path) -> int | None:
    t = _text(p)
    try:
        return int(t) if t else None
    except ValueError:
        return None
