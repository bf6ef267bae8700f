"""Summarise system samples (collect/sampler.py) into run.json's "system" block (pure).

    {"interval_s", "samples": [...], "unavailable": {sensor: why}, "summary": {...}}

Host: mean/max CPU utilisation, peak RSS (process and children), disk and network bytes
over the sampled span. GPUs: mean/max utilisation, SM clock and power over the readings that cover the measured
steps (`scope`; the whole run where none does), peak memory used and temperature over the run.
Energy over the measured window (the steps that count in the summary; docs/system.md): GPU
energy is the board's counter where it exists, else integrated NVML power (the integral stays
beside the counter as a cross-check); CPU package energy is RAPL's counter.
Per step and per token divide by the window's steps and tokens.
"""

from __future__ import annotations

from typing import Any, Sequence

from trainprof.analysis.run.energy import counter_delta, integrate_power

COARSE_INTERVALS = 4  # a window shorter than this many sampling intervals gets a note on its energy
HOST_COUNTERS = ("disk_read_bytes", "disk_write_bytes", "net_rx_bytes", "net_tx_bytes")


def _column(samples: Sequence[dict[str, Any]], key: str) -> tuple[list[float], list[float]]:
    pts = [(s["t_s"], s[key]) for s in samples if s.get(key) is not None]
    return [t for t, _ in pts], [v for _, v in pts]


def _stats(values: list[float]) -> dict[str, float] | None:
    return {"mean": sum(values) / len(values), "max": max(values)} if values else None


def gpu_series(samples: Sequence[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Per GPU index, its readings with the sample time: {0: [{"t_s", "power_w", ...}]}."""
    out: dict[int, list[dict[str, Any]]] = {}
    for s in samples:
        for g in s.get("gpus", ()):
            out.setdefault(g["index"], []).append({"t_s": s["t_s"], **g})
    return out


def host_counters(samples: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Bytes read/written/received/sent between the first and the last sample."""
    out = {}
    for key in HOST_COUNTERS:
        _, v = _column(samples, key)
        if len(v) >= 2:
            out[key] = int(v[-1] - v[0])
    return out


def _covering(rows: list[dict[str, Any]], window: tuple[float, float] | None,
              interval_s: float) -> list[dict[str, Any]]:
    """The GPU readings that describe the measured window: NVML's utilisation is the share of the
    last sample period a kernel ran, its power a trailing (up to 1 s) average, so a reading taken
    up to one interval after the window's end still covers it. Empty when none does (then the
    whole run's readings are summarised, and the GPU's `scope` says so). Without it, a compiled
    run's 24 s of compilation made a 91%-busy GPU read 'util 5% mean' (H200, 2026-11-28)."""
    if window is None:
        return []
    a, b = window
    return [r for r in rows if a < r["t_s"] <= b + interval_s]


def _energy(ts: list[float], values: list[float], window: tuple[float, float] | None,
            counter: bool) -> tuple[float, float] | None:
    if len(ts) < 2:
        return None
    a, b = window if window is not None else (None, None)
    return counter_delta(ts, values, a, b) if counter else integrate_power(ts, values, a, b)


def _host(samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    _, cpu = _column(samples, "cpu_util_pct")
    # the first reading covers the time since the sensor was primed, not an interval: skip it
    summary["cpu_util_pct"] = _stats(cpu[1:] if len(cpu) > 1 else cpu)
    for key in ("others_cpu_pct", "steal_pct", "load_avg_1m"):  # contention (diagnose: contended_machine)
        _, v = _column(samples, key)
        if v:
            summary[key] = _stats(v[1:] if len(v) > 1 and key != "load_avg_1m" else v)
    _, w = _column(samples, "workers_cpu_pct")
    if w:  # the DataLoader workers' CPU, % of one core per worker (diagnose/flowchart.py)
        summary["workers_cpu_pct"] = {**_stats(w), "workers_max": max(_column(samples, "workers")[1] or [0])}
    for key in ("rss_bytes", "children_rss_bytes"):
        _, v = _column(samples, key)
        summary[f"{key}_max"] = int(max(v)) if v else None
    summary.update(host_counters(samples))
    return summary


def _gpu(index: int, rows: list[dict[str, Any]], window: tuple[float, float] | None,
         interval_s: float) -> tuple[dict[str, Any], tuple[float, float] | None, tuple[float, float] | None]:
    """One GPU's summary, and its (joules, coverage) from power and from the counter (None: no readings)."""
    g: dict[str, Any] = {"index": index}
    covering = _covering(rows, window, interval_s)
    g["scope"] = "measured steps" if covering else "whole run"
    for key in ("util_pct", "mem_util_pct", "sm_clock_mhz", "power_w"):
        st = _stats([r[key] for r in covering or rows if key in r])
        if st:
            g[f"{key}_mean"], g[f"{key}_max"] = st["mean"], st["max"]
    for key in ("mem_used_bytes", "temp_c"):
        vals = [r[key] for r in rows if key in r]
        if vals:
            g[f"{key}_max"] = max(vals)
    power = _energy(*_column(rows, "power_w"), window, counter=False)
    if power is not None:
        g["energy_j"] = power[0]
    counter = _energy(*_column(rows, "energy_j"), window, counter=True)
    if counter is not None:
        g["energy_counter_j"] = counter[0]
    return g, power, counter


def _gpu_energy(energy: dict[str, Any], power: list[tuple[float, float]], counter: list[tuple[float, float]],
                why: dict[str, str]) -> None:
    if power and counter and len(counter) == len(power):
        # the board counter integrates every millisecond the driver sees; sampled power is a 1-s
        # average on Ampere+ read every interval: on the H200 (2026-11-28) a 0.27 s window gave
        # 48.9 J integrated against 130.7 J counted. The integral stays beside it as a cross-check.
        energy["gpu_j"] = energy["gpu_counter_j"] = sum(j for j, _ in counter)
        energy["gpu_source"] = "NVML board energy counter"
        energy["gpu_coverage"] = min(c for _, c in counter)
        energy["gpu_power_integral_j"] = sum(j for j, _ in power)
    elif power:
        energy["gpu_j"] = sum(j for j, _ in power)
        energy["gpu_source"] = "NVML power, trapezoid integral"
        energy["gpu_coverage"] = min(c for _, c in power)
    else:
        energy["gpu_unavailable"] = why.get("nvml", "no GPU power readings (not a CUDA run)")


def summarise_system(
    samples: Sequence[dict[str, Any]],
    *,
    interval_s: float,
    window: tuple[float, float] | None = None,
    steps: int = 0,
    tokens: int = 0,
    unavailable: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
) -> dict[str, Any]:
    """`window`: (start, end) of the measured steps on the samples' `t_s` axis."""
    summary: dict[str, Any] = {"n_samples": len(samples),
                               "duration_s": samples[-1]["t_s"] - samples[0]["t_s"] if samples else 0.0}
    summary.update(_host(samples))
    gpus, power, counter = [], [], []
    for index, rows in sorted(gpu_series(samples).items()):
        g, p, c = _gpu(index, rows, window, interval_s)
        gpus.append(g)
        power += [p] if p is not None else []
        counter += [c] if c is not None else []
    summary["gpus"] = gpus

    energy: dict[str, Any] = {"window_s": (window[1] - window[0]) if window else summary["duration_s"],
                              "window": list(window) if window else None,
                              "steps": steps, "tokens": tokens}
    why = dict(unavailable or {})
    _gpu_energy(energy, power, counter, why)
    cpu_e = _energy(*_column(samples, "cpu_energy_j"), window, counter=True)
    if cpu_e is not None:
        energy["cpu_j"], energy["cpu_coverage"] = cpu_e
        energy["cpu_source"] = "RAPL package energy counter"
    else:
        energy["cpu_unavailable"] = why.get("rapl", "no RAPL readings")
    if window is not None and "gpu_j" in energy and energy["window_s"] < COARSE_INTERVALS * interval_s:
        energy["gpu_note"] = (f"the measured window ({energy['window_s']:.2g} s) spans fewer than "
                              f"{COARSE_INTERVALS} sampling intervals ({interval_s:g} s): its ends are "
                              "interpolated between readings; run more steps or a shorter --system-interval")
    for part in ("gpu", "cpu"):
        if f"{part}_j" in energy:
            energy[f"{part}_j_per_step"] = energy[f"{part}_j"] / steps if steps else None
            energy[f"{part}_j_per_token"] = energy[f"{part}_j"] / tokens if tokens else None
    summary["energy"] = energy
    return {"interval_s": interval_s, "samples": list(samples), "unavailable": why,
            "errors": dict(errors or {}), "summary": summary}
