"""Run the rules, rank the findings, name the principal bottleneck."""

from __future__ import annotations

from functools import partial

from trainprof.analysis.projection import projected_gain_pct
from trainprof.diagnose import rules
from trainprof.diagnose.finding import Finding, Thresholds, severity

RULES = (rules.data_loading, rules.host_sync, rules.pageable_memcpy, rules.low_tensor_core, rules.launch_bound,
         rules.small_batch, rules.unaligned_shapes, rules.optimizer_bound, rules.exposed_communication,
         rules.memory_pressure, rules.math_attention)


def diagnose_rank(rank: dict | None, run: dict | None = None, th: Thresholds | None = None) -> list[dict]:
    """Findings for one rank, biggest estimated gain first. `rank` is an analysis record,
    `run` a run.json record; either may be None."""
    th = th or Thresholds()
    peaks = (rank or {}).get("roofline", {}).get("peaks_by_dtype") if rank and rank.get("has_gpu") else None
    found: list[Finding] = []
    for rule in RULES:
        fn = partial(rule, peaks=peaks) if rule is rules.low_tensor_core else rule
        f = fn(rank, run, th)
        if f is not None:
            found.append(f)
    found.sort(key=lambda f: (-f.estimated_gain_pct, f.id))
    # next to each upper bound, what the re-timed dependency graph projects (or None)
    return [{**f.to_dict(), "projected_gain_pct": projected_gain_pct(f.id, rank)} for f in found]


def principal(findings: list[dict], rank: dict | None) -> str | None:
    """The bottleneck class of the top finding; without findings, what the timeline shows."""
    if findings:
        return findings[0]["bottleneck"]
    if rank and rank.get("has_gpu"):
        tb = rank["temporal_breakdown"]
        if tb["compute_pct"] >= 50:
            return "compute"
        if tb["communication_pct"] >= 20:
            return "communication"
    return None


def diagnose_job(multi: dict | None) -> list[dict]:
    """Job-level findings across ranks (stragglers)."""
    if not multi or not multi.get("stragglers"):
        return []
    out = []
    step = (multi.get("step_time_us") or {}).get("median") or 0.0
    for s in multi["stragglers"]:
        gain = 100.0 * s["others_wait_us"] / step if step else s["compute_excess_pct"]
        gain = max(0.0, min(100.0, gain))
        out.append(Finding(
            id="stragglers", severity=severity(gain),
            title=f"Rank {s['rank']} is a straggler: the others wait for it",
            evidence=f"rank {s['rank']} computes {s['compute_excess_pct']:.1f}% more per step than the median and "
                     f"spends {s['others_wait_us'] / 1e3:,.1f} ms less in collectives than the median rank",
            estimated_gain_pct=round(gain, 2),
            fix="look for what only this rank does: garbage-collection pauses (gc.disable() + gc.collect() every N "
                "steps), NUMA/CPU affinity (bind each rank to its GPU's socket), a larger data shard or longer "
                "sequences (balance by tokens), a slower or throttled GPU (nvidia-smi -q -d PERFORMANCE)",
            confidence="medium", bottleneck="communication").to_dict())
    return sorted(out, key=lambda f: -f["estimated_gain_pct"])
