"""Across ranks: per-rank step time, compute, idle and communication; stragglers.

In a synchronous data-parallel job every rank waits for the slowest at each collective, so
the slow rank is the one that spends the *least* time in collectives (the others' NCCL
kernels spin while they wait for it) and the most time computing. We flag a rank as a
straggler when its compute time per step exceeds the median by more than `threshold_pct`
and its communication time is below the median (strictly: ranks that do not communicate
wait for nobody); `wait_us` estimates what each rank lost
waiting: its communication time minus the smallest rank's.

That is a guess from per-rank totals. Where the collectives could be matched across ranks
(analysis/job/collectives_job.py), `reconcile_stragglers` keeps a compute straggler only if it
really was the last to arrive somewhere with the others waiting for it: a rank that only
waited is never named.
"""

from __future__ import annotations

import statistics

import msgspec

from trainprof.recordtypes.analysis import ComputeStraggler, MultiRank, RankRow, Spread
from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.collectives import JobCollectives


def multi_rank(ranks: list[dict], threshold_pct: float = 5.0) -> MultiRank:
    """`ranks`: per-rank summaries (trace_report.rank_summary) with rank, step_time_us,
    compute_us, communication_us, idle_us (and has_gpu, host_step_us). Where no rank has GPU
    activity (a CPU job) only the host step times are compared: no straggler guess,
    device_timeline False. A job where some ranks have GPU activity compares the device timeline."""
    if len(ranks) < 2:
        return MultiRank(ranks=len(ranks), stragglers=[])
    if not any(r.get("has_gpu", True) for r in ranks):
        return _host_only(ranks)
    comp = [r["compute_us"] for r in ranks]
    comm = [r["communication_us"] for r in ranks]
    step = [r["step_time_us"] for r in ranks if r["step_time_us"] is not None]
    med_comp, med_comm = statistics.median(comp), statistics.median(comm)
    min_comm = min(comm)
    per_rank = []
    stragglers = []
    for r in ranks:
        per_rank.append(RankRow(rank=r["rank"], step_time_us=r["step_time_us"], compute_us=r["compute_us"],
                                communication_us=r["communication_us"], idle_us=r["idle_us"],
                                wait_us=r["communication_us"] - min_comm))
        excess = 100.0 * (r["compute_us"] - med_comp) / med_comp if med_comp > 0 else 0.0
        # the others must have spent longer in collectives than it did: without that nobody
        # waited for it (a folder of unrelated or single-GPU traces has no communication)
        if excess > threshold_pct and r["communication_us"] < med_comm:
            stragglers.append(ComputeStraggler(rank=r["rank"], compute_excess_pct=excess,
                                               others_wait_us=med_comm - r["communication_us"]))
    return MultiRank(
        ranks=len(ranks),
        step_time_us=Spread(min=min(step), median=statistics.median(step), max=max(step)) if step else None,
        compute_us=Spread(min=min(comp), median=med_comp, max=max(comp)),
        communication_us=Spread(min=min_comm, median=med_comm, max=max(comm)),
        per_rank=per_rank,
        stragglers=sorted(stragglers, key=lambda s: -s.compute_excess_pct),
        threshold_pct=threshold_pct,
    )


def _host_only(ranks: list[dict]) -> MultiRank:
    """A job whose traces hold no GPU activity (gloo on CPU): each rank's host step, and None
    for compute, communication, idle and wait, which only a device timeline measures (they
    read 0.0 before, issue #37); who waited for whom is the matched collectives' to say."""
    step = [r["host_step_us"] for r in ranks if r.get("host_step_us") is not None]
    return MultiRank(
        ranks=len(ranks),
        step_time_us=Spread(min=min(step), median=statistics.median(step), max=max(step)) if step else None,
        per_rank=[RankRow(rank=r["rank"], step_time_us=r.get("host_step_us"), compute_us=None, communication_us=None,
                          idle_us=None, wait_us=None) for r in ranks],
        stragglers=[],
        device_timeline=False,
    )


def reconcile_stragglers(stragglers: list[ComputeStraggler], job: JobCollectives | None
                         ) -> tuple[list[ComputeStraggler], JobCollectives | None]:
    """The compute stragglers the matched collectives do not contradict (a straggler must be
    the last arriver somewhere, with others waiting for it), and the job's collectives with a
    note naming those dropped. Without matched collectives nothing changes."""
    if not job or not job.matched:
        return stragglers, job
    rows = {r.rank: r for r in job.per_rank}
    kept = [s for s in stragglers if s.rank in rows and rows[s.rank].others_waited]
    dropped = [s.rank for s in stragglers if s not in kept]
    if not dropped:
        return stragglers, job
    note = (f"compute straggler guess for rank {', '.join(map(str, dropped))} dropped: the matched collectives show "
            "no wait for it")
    return kept, msgspec.structs.replace(job, notes=[*or_default(job.notes, []), note])
