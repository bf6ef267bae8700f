"""System sensors read by the background sampler (collect/sampler.py): host CPU, memory and IO
through psutil, CPU package energy through Linux RAPL, GPUs through NVML (backends/nvml.py).

A sensor is anything with `name`, `reason` (None when it works, else why not, in words)
and `read() -> dict`: flat fields for the host, `{"gpus": [...]}` for GPUs. Counters are
returned as the OS keeps them (cumulative); the pure analysis turns them into totals and
rates (analysis/run/system.py). Nothing here runs at import.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Protocol


class Sensor(Protocol):
    name: str
    reason: str | None  # None: readable; otherwise why it is not (shown in run.json)

    def read(self) -> dict[str, Any]: ...


class HostSensor:
    """CPU utilisation (all cores, % of the machine), this process's RSS and its children's
    (DataLoader workers), and machine-wide disk and network bytes (cumulative).

    psutil because it is the maintained cross-platform reader of exactly these counters
    (Linux /proc, macOS, Windows). One read measured 1.0 ms on the 2-core VM: CPU times and
    RSS 33 µs, disk and network counters 130 µs, listing children (a scan of /proc) 830 µs."""

    name = "host"

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil
        self._proc = psutil.Process()
        self.reason: str | None = None
        # Our own previous reading of the CPU times, not psutil.cpu_percent(None): that keeps
        # its "last call" per thread, so the sampler thread's first reading would be 0.0.
        self._last = self._cpu_times()
        # each child's CPU seconds at the previous read, for its share of one core since then
        # (the flowchart's preprocessing- vs I/O-bound test, diagnose/flowchart.py)
        self._child_cpu: dict[int, float] = {}
        self._last_wall = time.monotonic()

    def _cpu_times(self) -> tuple[float, float, float, float]:
        """(busy, total, steal, own) seconds since boot: all cores (iowait counts as idle, as
        top does), the hypervisor's steal, and this process's CPU time with its children's."""
        t = self._psutil.cpu_times()
        idle = t.idle + getattr(t, "iowait", 0.0)
        total = sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)  # guest is in user
        p = self._proc.cpu_times()
        own = p.user + p.system + getattr(p, "children_user", 0.0) + getattr(p, "children_system", 0.0)
        return total - idle, total, getattr(t, "steal", 0.0), own

    def read(self) -> dict[str, Any]:
        ps = self._psutil
        now = self._cpu_times()
        d_busy, d_total, d_steal, d_own = (a - b for a, b in zip(now, self._last))
        self._last = now
        out: dict[str, Any] = {"cpu_util_pct": _percent(d_busy, d_total),
                               # what other processes (and the hypervisor) took from this machine:
                               # the contention that makes CPU step times noisy (docs/rules.md)
                               "others_cpu_pct": _percent(d_busy - d_own, d_total),
                               "steal_pct": _percent(d_steal, d_total),
                               "rss_bytes": self._proc.memory_info().rss}
        load = _quiet(os.getloadavg)
        if load is not None:
            out["load_avg_1m"] = round(load[0], 2)
        children = 0
        wall = time.monotonic()
        dt, self._last_wall = wall - self._last_wall, wall
        seen: dict[int, float] = {}
        shares = []
        for c in self._proc.children(recursive=True):
            try:
                children += c.memory_info().rss
                t = c.cpu_times()
                seen[c.pid] = t.user + t.system
            except (ps.NoSuchProcess, ps.AccessDenied):  # a worker that just exited
                continue
            if c.pid in self._child_cpu and dt > 0:
                shares.append(100.0 * (seen[c.pid] - self._child_cpu[c.pid]) / dt)
        self._child_cpu = seen
        out["children_rss_bytes"] = children
        if shares:  # mean per child (DataLoader workers, or any other child), % of one core
            out["workers_cpu_pct"] = round(max(0.0, sum(shares) / len(shares)), 1)
            out["workers"] = len(shares)
        disk = _quiet(ps.disk_io_counters)  # None in some containers (no /proc/diskstats)
        if disk is not None:
            out["disk_read_bytes"], out["disk_write_bytes"] = disk.read_bytes, disk.write_bytes
        net = _quiet(ps.net_io_counters)
        if net is not None:
            out["net_rx_bytes"], out["net_tx_bytes"] = net.bytes_recv, net.bytes_sent
        return out


def _percent(part: float, whole: float) -> float | None:
    # clamped and rounded: the float sums of /proc/stat ticks land a hair above 100
    return round(min(100.0, max(0.0, 100.0 * part / whole)), 1) if whole > 0 else None


def _quiet(fn: Any) -> Any:
    try:
        return fn()
    except (OSError, RuntimeError):
        return None


POWERCAP = "sys/class/powercap"


class RaplSensor:
    """CPU package energy (joules, cumulative, all sockets) from Linux RAPL powercap.

    Reads each top-level package domain's `energy_uj` (intel-rapl:N; AMD Zen exposes the
    same interface) and unwraps its overflow at `max_energy_range_uj`. Since Linux 5.10
    (CVE-2020-8694) `energy_uj` is readable by root only, and containers usually lack
    powercap: then `reason` says so and no CPU energy is reported.
    """

    name = "rapl"

    def __init__(self, root: str | Path = "/") -> None:
        self._domains: list[tuple[Path, int]] = []
        self._last: list[int] = []
        self._wraps: list[int] = []
        self.reason: str | None = None
        base = Path(root) / POWERCAP
        if not base.is_dir():
            self.reason = f"no RAPL powercap interface (/{POWERCAP} is absent: not Linux on Intel/AMD, or a container)"
            return
        # top-level package domains only: intel-rapl:0, intel-rapl:1 (sub-domains are parts of them)
        tops = sorted(p for p in base.iterdir() if p.name.count(":") == 1 and p.name.split(":")[0].endswith("rapl"))
        for d in tops:
            try:
                if not (d / "name").read_text().strip().startswith("package"):
                    continue
                rng = int((d / "max_energy_range_uj").read_text())
                first = int((d / "energy_uj").read_text())
            except PermissionError:
                self.reason = f"/{POWERCAP}/{d.name}/energy_uj is readable by root only (Linux ≥ 5.10)"
                self._domains = []
                return
            except (OSError, ValueError):
                continue
            self._domains.append((d / "energy_uj", rng))
            self._last.append(first)
            self._wraps.append(0)
        if not self._domains and self.reason is None:
            self.reason = f"no readable RAPL package domain under /{POWERCAP}"

    def read(self) -> dict[str, Any]:
        if not self._domains:
            return {}
        total_uj = 0
        for i, (path, rng) in enumerate(self._domains):
            now = int(path.read_text())
            if now < self._last[i]:  # the counter wrapped (every ~60 s at 250 W on some parts)
                self._wraps[i] += 1
            self._last[i] = now
            total_uj += now + self._wraps[i] * rng
        return {"cpu_energy_j": total_uj / 1e6}


def default_sensors(device_kind: str) -> list[Any]:
    """The host and RAPL sensors everywhere; NVML on CUDA devices (or a reason why not)."""
    sensors: list[Any] = [HostSensor(), RaplSensor()]
    if device_kind == "cuda":
        from trainprof.backends.nvml import NvmlSensor

        sensors.append(NvmlSensor(visible=_visible_indices()))
    return sensors


def _visible_indices() -> list[int] | None:
    """CUDA_VISIBLE_DEVICES as NVML indices when it lists integers (UUIDs/MIG: all GPUs)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return None
    items = [x.strip() for x in env.split(",") if x.strip()]
    return [int(x) for x in items] if all(x.isdigit() for x in items) else None
