"""Job-level findings from the matched collectives (analysis/job/collectives_job.py).

A culprit is a rank the others waited for, on the GPU (gloo: at the call), at a collective:
it arrived last, and the waits attributed to it are large. Nothing else names a rank: a
rank whose host enters the steps late costs nothing while its GPU still arrives on time
(asynchronous launches let the CPU run ahead), so host step-entry lateness is evidence
beside a culprit, never a finding by itself.

stragglers   a culprit: last to arrive where the others waited for it; gain = the mean other
             rank's wait attributed to it / the matched window (`gain_pct` of its record row).
late_ranks   the same culprit, told differently, where its caused waits sit at the first
             collective of its profiler steps and its host also enters those steps late:
             the delay is before the step, on its host. One finding per rank at most.
explain_waits  one cause, one finding: a rank whose exposed communication or blocking host
             calls are mostly waiting for a culprit loses that finding; the culprit's finding
             cites it as evidence (its waits, its syncs released by the delayed collectives).

The gains are disjoint parts of the measured waits (each instant of a rank's waiting is
attributed to one culprit), so together they never exceed `wait_bound_pct`
(diagnose/job_invariants.py checks it, and that every named rank was a last arriver).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from msgspec import UNSET
from msgspec.structs import replace

from trainprof.ranking import rank_key
from trainprof.diagnose.finding import Finding, severity
from trainprof.diagnose.registry import rule
from trainprof.diagnose.job_invariants import enforce
from trainprof.recordtypes.analysis import MultiRank
from trainprof.recordtypes.collectives import CollectiveRank, JobCollectives
from trainprof.recordtypes.base import as_struct


@dataclass(frozen=True)
class JobThresholds:
    min_others_wait_us: float = 1000.0
    """a culprit: the mean other rank waited ≥ this long for it in the window (noise is µs per collective)"""
    min_gain_pct: float = 0.5
    """a culprit: and that wait is ≥ this % of the matched window (less is not worth a finding)"""
    caused_share_factor: float = 1.5
    """a culprit: its share of the job's waits ≥ this × its fair share 100/n % (ranks late by turns
    share the waits evenly: jitter, not a culprit)"""
    first_collective_pct: float = 50.0
    """late_ranks: ≥ this % of its caused waits at the first collective of its profiler steps ..."""
    late_us: float = 1000.0
    """late_ranks: ... and its host enters the steps ≥ this late (and ≥ late_step_pct of the step) ..."""
    late_steps_pct: float = 75.0
    """late_ranks: ... in ≥ this % of the steps"""
    late_step_pct: float = 5.0
    """late_ranks: median host lateness ≥ this % of the median step time"""
    wait_explains_pct: float = 50.0
    """explain_waits: a rank's waits for the culprits ≥ this % of its communication time"""


_FIX = ("look for what only this rank does: garbage-collection pauses (gc.disable() + gc.collect() every N "
        "steps), NUMA/CPU affinity (bind each rank to its GPU's socket), a larger data shard or longer "
        "sequences (balance by tokens), a slower or throttled GPU (nvidia-smi -q -d PERFORMANCE)")
_LATE_FIX = ("the delay is on this rank's host before the step: DataLoader workers (num_workers, pin_memory, "
             "prefetch_factor), a host sync or logging (.item(), print) at the end of the previous step, checkpoint "
             "or evaluation work on this rank only, CPU contention (bind ranks to cores)")


def culprits(job: JobCollectives, th: JobThresholds) -> list[CollectiveRank]:
    """Ranks the others waited for (module docstring), from their rows of the record."""
    if not job.matched or job.ranks < 2:
        return []
    fair = 100.0 / job.ranks
    return [r for r in job.per_rank
            if r.gain_pct is not UNSET and r.others_waited
            and r.others_wait_us >= th.min_others_wait_us and r.gain_pct >= th.min_gain_pct
            and r.caused_share_pct >= th.caused_share_factor * fair]


def _host_late(job: JobCollectives, rank: int, step_us: float, th: JobThresholds) -> tuple[bool, str]:
    """(late enough for late_ranks, the host step-entry figures as evidence)."""
    late = job.lateness
    row = next((x for x in late.per_rank if x.rank == rank), None) if late else None
    if row is None:
        return False, ""
    floor = max(th.late_us, step_us * th.late_step_pct / 100.0 if step_us else 0.0)
    per_step = row.late_us or [row.median_late_us]
    often = 100.0 * sum(x >= floor for x in per_step) / len(per_step) >= th.late_steps_pct
    text = (f"; its host entered steps {late.steps[0]}–{late.steps[-1]} a median {row.median_late_us / 1e3:,.2f} ms "
            f"(max {row.max_late_us / 1e3:,.2f} ms) after its peers' median entry")
    return row.median_late_us >= floor and often, text


@rule("stragglers", "late_ranks", scope="job")
def job_findings(multi: MultiRank, th: JobThresholds) -> list[tuple[int, Finding]]:
    """(rank, finding) per culprit: late_ranks where the delay is before its steps, else stragglers."""
    job = multi.collectives
    if not job:
        return []
    step_us = multi.step_time_us.median if multi.step_time_us else 0.0
    out = []
    for r in culprits(job, th):
        late, host = _host_late(job, r.rank, step_us, th)
        gain = max(0.0, min(100.0, r.gain_pct))
        evidence = (f"last to arrive at {r.last_count} of {job.matched} matched collectives; the other ranks waited "
                    f"a mean {r.others_wait_us / 1e3:,.2f} ms for it ({r.caused_share_pct:.0f}% of the job's waits, "
                    f"{gain:.1f}% of the {job.span_us / 1e3:,.1f} ms window)")
        if late and r.first_collective_pct >= th.first_collective_pct:
            out.append((r.rank, Finding(
                id="late_ranks", severity=severity(gain),
                title=f"Rank {r.rank} starts its steps late: the others wait for it at the first collective",
                evidence=f"{evidence}; {r.first_collective_pct:.0f}% of those waits at the first collective of its "
                         f"steps{host}",
                estimated_gain_pct=round(gain, 2), fix=_LATE_FIX, confidence="medium", bottleneck="host overhead")))
        else:
            out.append((r.rank, Finding(
                id="stragglers", severity=severity(gain),
                title=f"Rank {r.rank} arrives last at the collectives: the others wait for it",
                evidence=evidence + host, estimated_gain_pct=round(gain, 2), fix=_FIX, confidence="high",
                bottleneck="communication")))
    return out


def _moved(findings: list[Finding], fid: str, note: str) -> bool:
    """Drop the rank's `fid` finding (it is the culprit's now); True if it had one."""
    had = any(f.id == fid for f in findings)
    findings[:] = [f for f in findings if f.id != fid]
    return had and bool(note)


def explain_waits(ranks: list[tuple[int, float, list[Finding]]], multi: MultiRank, th: JobThresholds,
                  named: set[int], sync_waited: dict[int, tuple[float, dict[int, float]]] | None = None
                  ) -> dict[int, list[str]]:
    """One cause, one finding (issue #39 item 3): a rank's exposed communication or host-sync
    time that is mostly waiting for a named rank is that rank's lateness, not the waiting
    rank's code. Where the waits for the named ranks are ≥ `wait_explains_pct` of the rank's
    collective time (its `waited_for` entries), its exposed_communication finding is removed;
    where they are ≥ that share of its blocking host calls' time (`sync_waited`: per rank, its
    syncs' total µs and the µs of them a collective waiting for each rank released,
    analysis/job/symptoms.py), its host_sync finding is. Each removal becomes evidence of the
    culprit's finding (returned: culprit → phrases); a smaller share stays on the rank's
    finding as a note. `ranks`: per rank (its number, its communication kernels' total µs,
    its findings while they are being built, edited in place)."""
    job = multi.collectives
    moved: dict[int, list[str]] = defaultdict(list)
    if not job or not named:
        return moved
    rows = {r.rank: r for r in job.per_rank}
    for r, comm, findings in ranks:
        if r in named:
            continue
        row = rows.get(r)
        if row is not None and comm > 0 and row.waited_for is not UNSET:
            mine = {w.rank: w.wait_us for w in row.waited_for if w.rank in named}
            _attribute(findings, "exposed_communication", mine, comm, th, moved, r,
                       "of exposed communication waiting for it")
        total, by = (sync_waited or {}).get(r, (0.0, {}))
        mine = {k: us for k, us in by.items() if k in named}
        if total > 0 and mine:
            _attribute(findings, "host_sync", mine, total, th, moved, r,
                       "blocked in host syncs that a collective waiting for it released")
    return moved


def _attribute(findings: list[Finding], fid: str, mine: dict[int, float], whole: float, th: JobThresholds,
               moved: dict[int, list[str]], r: int, what: str) -> None:
    waited = sum(mine.values())
    if waited <= 0:
        return
    k = max(mine, key=mine.get)  # the culprit it waited for most
    if 100.0 * waited / whole >= th.wait_explains_pct:
        if _moved(findings, fid, what):
            moved[k].append(f"rank {r}: {waited / 1e3:,.1f} ms {what} ({100.0 * waited / whole:.0f}% of its "
                            f"{'collective' if fid == 'exposed_communication' else 'blocked host'} time; its {fid} "
                            "finding is this one)")
        return
    who = ", ".join(str(c) for c in sorted(mine))
    note = f"; {waited / 1e3:,.1f} ms of it ({100.0 * waited / whole:.0f}%) is waiting for rank {who} (job findings)"
    findings[:] = [replace(f, evidence=f.evidence + note) if f.id == fid else f for f in findings]


def diagnose_collectives(ranks: list[tuple[int, float, list[Finding]]], multi: dict | MultiRank,
                         th: JobThresholds | None = None,
                         sync_waited: dict[int, tuple[float, dict[int, float]]] | None = None) -> list[Finding]:
    """Job findings from the matched collectives, biggest gain first; `multi` is the
    multi_rank block (its Struct, or a hand-written dict); `ranks` and `sync_waited` as
    explain_waits takes them (the waiting ranks' symptom findings move to the culprit's)."""
    th = th or JobThresholds()
    multi = as_struct(multi, MultiRank)
    found = enforce(multi, job_findings(multi, th))
    moved = explain_waits(ranks, multi, th, {r for r, _ in found}, sync_waited)
    out = [replace(f, evidence=f.evidence + "; its lateness also shows on the others as " + "; ".join(moved[r]))
           if moved.get(r) else f for r, f in found]
    return sorted(out, key=rank_key)
