"""`machine_state`: the machine itself costs speed (seed 003, 4.1.3-4.1.4) — a GPU throttled by
power or heat, application clocks locked below the maximum, a CPU governor that keeps the cores
below their top clock — each with the command that fixes it. Read from run.json's
`environment.machine_state` (backends/machine_state.py, read after the measured steps).

gain, an upper bound: the clock deficit × the share of the step that clock runs —
GPU: (1 − SM clock ÷ its maximum) × the compute share (forward + backward); CPU: (1 − current
÷ maximum frequency) × the host's share (data + optimizer + other). Persistence mode off costs
the driver's start-up per process, not step time: a note (gain 0).
"""

from __future__ import annotations

from trainprof.diagnose.finding import Finding, severity
from trainprof.diagnose.registry import RuleInput, rule
from trainprof.recordtypes.run import RunRecord

# A governor other than these lets the cores idle down between bursts of host work (the
# Linux cpufreq docs: "performance" pins the top frequency).
FAST_GOVERNORS = ("performance",)
CLOCK_DEFICIT = 0.10  # a clock ≥ 10% under its maximum is a cost worth naming (below: boost noise)


def _share(run: RunRecord, *fields: str) -> float:
    t = float(run.summary.step_time_s or 0.0)
    return sum(float(getattr(run.summary, f)) for f in fields) / t if t > 0 else 0.0


@rule("machine_state")
def machine_state(x: RuleInput) -> Finding | None:
    run = x.run
    ms = (run.environment or {}).get("machine_state") if run is not None else None
    if not ms:
        return None
    parts, fixes, gain = [], [], 0.0
    sysgpus = {g.index: g for g in run.system_summary.gpus} if run.system_summary is not None else {}
    for g in ms.get("gpus", []):
        mx = g.get("max_sm_mhz")
        clock = getattr(sysgpus.get(g["index"]), "sm_clock_mhz_mean", None)
        if g.get("throttle"):
            parts.append(f"GPU {g['index']} throttled now: {', '.join(g['throttle'])}"
                         + (f" (SM clock {clock:.0f} of {mx:.0f} MHz over the steps)" if clock and mx else ""))
            fixes.append("check cooling and power: `nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE`; "
                         "restore the power limit with `sudo nvidia-smi -pl <default W>`")
            if clock and mx and clock < (1 - CLOCK_DEFICIT) * mx:
                gain = max(gain, (1 - clock / mx) * _share(run, "forward_s", "backward_s"))
        app = g.get("app_sm_mhz")
        if app and mx and app < (1 - CLOCK_DEFICIT) * mx:
            parts.append(f"GPU {g['index']} application clock locked at {app:.0f} of {mx:.0f} MHz")
            fixes.append("`sudo nvidia-smi -rac` (reset application clocks) or `sudo nvidia-smi -rgc`")
            gain = max(gain, (1 - app / mx) * _share(run, "forward_s", "backward_s"))
        if g.get("persistence") is False:
            parts.append(f"GPU {g['index']} persistence mode off (each process pays the driver's start-up)")
            fixes.append("`sudo nvidia-smi -pm 1`")
    cpu = ms.get("cpu") or {}
    slow = {k: v for k, v in (cpu.get("governors") or {}).items() if k not in FAST_GOVERNORS}
    cur, mx = cpu.get("cur_mhz_mean"), cpu.get("max_mhz")
    if slow and cur and mx and cur < (1 - CLOCK_DEFICIT) * mx:
        parts.append(f"CPU governor {', '.join(f'{k} ({v} cores)' for k, v in slow.items())}: cores at "
                     f"{cur:.0f} of {mx:.0f} MHz")
        fixes.append("`sudo cpupower frequency-set -g performance`")
        gain = max(gain, (1 - cur / mx) * _share(run, "data_s", "optimizer_s", "other_s"))
    if not parts:
        return None
    gain = round(max(0.0, min(100.0, 100.0 * gain)), 2)
    gpu = any(p.startswith("GPU") for p in parts)
    return Finding(id="machine_state", severity=severity(gain), title="The machine's own state costs speed",
                   evidence="; ".join(parts), estimated_gain_pct=gain, fix="; ".join(dict.fromkeys(fixes)),
                   confidence="medium", bottleneck="compute" if gpu else "host overhead")
