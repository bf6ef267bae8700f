"""report.html's System section as a view: one (label, text) row per reading (CPU, RSS, each
GPU, energy) and the sampling note's figures. Every figure through report/figures.show with its
field in run.json, as the template showed it; the energy rows are the terminal's
(report/system_terminal.py), so both reports say the same sentence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainprof.report.figures import show

AT = "run.system.summary"


@dataclass(frozen=True)
class SystemView:
    rows: tuple[tuple[str, str], ...]  # (label, text), in the table's order
    n_samples: int
    interval_s: Any  # as the record holds it (the sampler's setting, not a measured figure)
    duration: str


def _cpu(ss: Any) -> str:
    cpu = ss.cpu_util_pct
    if not cpu:  # no reading: — without a field to name (the block is null)
        return "— mean, — max"
    return f"{show(cpu.mean, 'pct_value0', AT + '.cpu_util_pct.mean')} mean, " \
           f"{show(cpu.max, 'pct_value0', AT + '.cpu_util_pct.max')} max"


def _rss(ss: Any) -> str:
    text = show(ss.rss_bytes_max, "bytes", AT + ".rss_bytes_max")
    if ss.children_rss_bytes_max:
        text += f" (+ workers {show(ss.children_rss_bytes_max, 'bytes', AT + '.children_rss_bytes_max')})"
    return text


def _gpu(g: Any, i: int) -> str:
    f = f"{AT}.gpus[{i}]."
    return (f"utilisation {show(g.util_pct_mean, 'pct_value0', f + 'util_pct_mean')} mean · "
            f"SM clock {show(g.sm_clock_mhz_mean, 'num0', f + 'sm_clock_mhz_mean')} MHz · "
            f"memory {show(g.mem_used_bytes_max, 'bytes', f + 'mem_used_bytes_max')} · "
            f"power {show(g.power_w_mean, 'num0', f + 'power_w_mean')} W mean, "
            f"{show(g.power_w_max, 'num0', f + 'power_w_max')} max · {show(g.temp_c_max, 'num0', f + 'temp_c_max')} °C max")


def system_view(system: Any) -> SystemView | None:
    """None for a run without a system block (an analyze folder, or sampling off)."""
    if not system:
        return None
    from trainprof.report.system_terminal import energy_lines  # rich (~25 ms): only when a block is there

    ss = system.summary
    rows = [("CPU utilisation (all cores)", _cpu(ss)), ("process RSS, peak", _rss(ss))]
    rows += [(f"GPU {g.index}", _gpu(g, i)) for i, g in enumerate(ss.gpus)]
    rows += [(f"{label} energy", text) for label, text in energy_lines(system)]
    return SystemView(tuple(rows), ss.n_samples, system.interval_s, show(ss.duration_s, "num1", AT + ".duration_s"))
