"""Job-level findings from the matched collectives (analysis/collectives_job.py).

stragglers  the rank that arrives last at most collectives, named with its share of all the
            waits it caused the others (TraceLens' "straggler" per collective, counted per job).
late_ranks  ranks whose host enters the profiled steps after the others (analysis/lateness.py):
            the waiting happens at the first collective, but the cause is on the late host.
explain_waits  a rank whose communication is mostly waiting for such a rank is not told to tune
            its DDP buckets: its exposed_communication finding points at the rank to fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainprof.diagnose.finding import Finding, severity
from trainprof.recordtypes.analysis import MultiRank
from trainprof.recordtypes.base import as_struct


@dataclass(frozen=True)
class JobThresholds:
    last_share_pct: float = 75.0
    """stragglers: last to arrive at ≥ this % of the matched collectives (chance is 100/n %)"""
    min_caused_wait_us: float = 1000.0
    """stragglers: and the others waited ≥ this long for it, in total (noise is µs per collective)"""
    late_us: float = 1000.0
    """late_ranks: lateness entering a step ≥ this (and ≥ late_step_pct of the step) ..."""
    late_steps_pct: float = 75.0
    """late_ranks: ... in ≥ this % of the steps (ranks late by turns are noise, not a late rank)"""
    late_step_pct: float = 5.0
    """late_ranks: median lateness ≥ this % of the median step time"""
    wait_explains_pct: float = 50.0
    """explain_waits: a rank's waits ≥ this % of its communication time are blamed on others"""


_FIX = ("look for what only this rank does: garbage-collection pauses (gc.disable() + gc.collect() every N "
        "steps), NUMA/CPU affinity (bind each rank to its GPU's socket), a larger data shard or longer "
        "sequences (balance by tokens), a slower or throttled GPU (nvidia-smi -q -d PERFORMANCE)")


def _step_span_us(multi: MultiRank) -> float:
    return multi.step_time_us.median if multi.step_time_us else 0.0


def stragglers(multi: MultiRank, th: JobThresholds) -> list[tuple[int, Finding]]:
    """(rank, finding) per straggler."""
    job = multi.collectives
    if not job or not job.matched:
        return []
    out = []
    n = job.ranks
    for r in job.per_rank:
        last_pct = 100.0 * r.last_count / job.matched
        if last_pct < th.last_share_pct or r.caused_wait_us < th.min_caused_wait_us:
            continue
        # what the others would get back per collective if this rank arrived with them
        per_coll_wait = r.caused_wait_us / job.matched / max(1, n - 1)
        # upper bound: the mean rank's wait for it, over the collectives' window
        gain = 100.0 * r.caused_wait_us / max(1, n - 1) / job.span_us if job.span_us else 0.0
        gain = max(0.0, min(100.0, gain))
        out.append((r.rank, Finding(
            id="stragglers", severity=severity(gain),
            title=f"Rank {r.rank} arrives last at the collectives: the others wait for it",
            evidence=f"last at {r.last_count} of {job.matched} matched collectives ({last_pct:.0f}%); the "
                     f"other ranks waited {r.caused_wait_us / 1e3:,.1f} ms for it in total "
                     f"({r.caused_share_pct:.0f}% of all waits in the job, {per_coll_wait / 1e3:,.2f} ms per "
                     f"collective per rank)",
            estimated_gain_pct=round(gain, 2), fix=_FIX, confidence="high", bottleneck="communication")))
    return out


def late_ranks(multi: MultiRank, th: JobThresholds) -> list[tuple[int, Finding]]:
    """(rank, finding) per late rank."""
    late = multi.collectives.lateness if multi.collectives else None
    if not late:
        return []
    step = _step_span_us(multi)
    out = []
    floor = max(th.late_us, step * th.late_step_pct / 100.0 if step else 0.0)
    for r in late.per_rank:
        m = r.median_late_us
        per_step = r.late_us or [m]
        if m < floor or 100.0 * sum(x >= floor for x in per_step) / len(per_step) < th.late_steps_pct:
            continue
        gain = max(0.0, min(100.0, 100.0 * m / step)) if step else 0.0
        out.append((r.rank, Finding(
            id="late_ranks", severity=severity(gain),
            title=f"Rank {r.rank} starts its steps late: the others wait at the first collective",
            evidence=f"entered steps {late.steps[0]}–{late.steps[-1]} a median {m / 1e3:,.2f} ms "
                     f"(max {r.max_late_us / 1e3:,.2f} ms) after the first rank (clocks aligned on collective "
                     "ends)",
            estimated_gain_pct=round(gain, 2),
            fix="the delay is on this rank's host before the step: DataLoader workers (num_workers, "
                "pin_memory, prefetch_factor), a host sync or logging (.item(), print) at the end of the previous "
                "step, checkpoint or evaluation work on this rank only, CPU contention (bind ranks to cores)",
            confidence="medium", bottleneck="host overhead")))
    return out


def explain_waits(ranks: list[dict], multi: MultiRank, th: JobThresholds, culprits: set[int]) -> None:
    """Rewrite, in place, the exposed_communication finding of ranks (the analysers' dicts,
    whose findings are being written) that mostly wait for a culprit rank (a straggler or a
    late rank)."""
    job = multi.collectives
    if not job or not culprits:
        return
    waits = {r.rank: r.wait_us for r in job.per_rank}
    for rank in ranks:
        r = rank["rank"]
        comm = (rank.get("communication") or {}).get("total_us") or 0.0
        if r in culprits or comm <= 0 or 100.0 * waits.get(r, 0.0) / comm < th.wait_explains_pct:
            continue
        who = ", ".join(str(c) for c in sorted(culprits))
        for f in rank.get("findings") or []:
            if f["id"] == "exposed_communication":
                f["evidence"] += (f"; {waits[r] / 1e3:,.1f} ms of this rank's collective time is waiting for "
                                  f"rank {who} (job findings)")
                f["fix"] = (f"fix rank {who} first (see the job findings): this rank's collectives mostly wait "
                            "for it, and tuning this rank's buckets or overlap cannot remove that wait")
                f["confidence"] = "high"


def diagnose_collectives(ranks: list[dict], multi: dict | MultiRank, th: JobThresholds | None = None) -> list[dict]:
    """Job findings from the matched collectives, biggest gain first; `multi` is the
    multi_rank block (the analyser's dict or its Struct)."""
    th = th or JobThresholds()
    multi = as_struct(multi, MultiRank)
    late = late_ranks(multi, th)
    late_ids = {r for r, _ in late}
    # a rank late at the host is also last at the collectives: one finding, the specific one
    found = [(r, f) for r, f in stragglers(multi, th) if r not in late_ids] + late
    explain_waits(ranks, multi, th, {r for r, _ in found})
    return [f.to_dict() for _, f in sorted(found, key=lambda rf: -rf[1].estimated_gain_pct)]
