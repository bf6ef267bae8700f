"""Throughput over batch sizes and rank counts (issue #41): pure functions of measured numbers.

Scaling efficiency of data parallelism with a fixed per-rank batch (weak scaling):

    efficiency(N) = tokens/s(N) / (N × tokens/s(1))

1.0 is perfect: N ranks do N times the work in the same step time. What is lost is time per
step a rank spends on something one rank did not do: the collectives (all-reduce of the
gradients; and a rank that arrives first waits for the last inside them), and on a CPU the
cores the ranks share. The collectives' share comes from a profile of every rank
(analysis/job/collectives.py: each instance's interval on the rank's clock and how much of it
overlapped the rank's own compute):

    comm_share   = |∪ collective intervals| / Σ step times           (per rank, then the mean)
    exposed_share = Σ duration × (1 − overlap) × |∪| / Σ duration / Σ step times   (what compute did
                   not hide, on the union's time: never above comm_share)
    explained    = exposed_share × step(N) / (step(N) − step(1))      (of the time lost per step)
"""

from __future__ import annotations

from typing import Any, Sequence
from trainprof.vocab import collectives as cv


def efficiency(tokens_per_s: float, n: int, tokens_per_s_1: float) -> float | None:
    return tokens_per_s / (n * tokens_per_s_1) if tokens_per_s_1 > 0 and n > 0 else None


def union_us(starts: Sequence[float], ends: Sequence[float]) -> float:
    """Length of the union of intervals (gloo may run two collectives of a step at once)."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(zip(starts, ends)):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0.0)


def rank_comm(collectives: Any, step_time_us: float | None) -> dict[str, Any] | None:
    """One rank's collectives over its profiled steps (a RankCollectives record and the rank's
    mean profiled step): the shares above, collectives and all-reduced bytes per step. None when
    the profile has no steps or no collectives (one rank)."""
    if collectives is None or not step_time_us or not collectives.start_us:
        return None
    steps = len(collectives.step_number) or 1
    starts, ends = collectives.start_us, collectives.end_us
    overlap = collectives.compute_overlap_pct or [None] * len(starts)
    busy = sum(e - s for s, e in zip(starts, ends))
    union = union_us(starts, ends)
    # what compute did not hide, on the union's wall time: two collectives at once (gloo) expose one
    # stretch of time, not two; the plain sum read 0.405 of the step against a union of 0.393
    exposed = sum((e - s) * (1 - (o or 0.0) / 100) for s, e, o in zip(starts, ends, overlap))
    exposed *= union / busy if busy > 0 else 0.0
    reduced = [b for op, b in zip(collectives.op, collectives.bytes) if op == cv.ALL_REDUCE and b]
    span = step_time_us * steps
    return {"comm_share": union / span, "exposed_share": exposed / span,
            "collectives_per_step": len(starts) / steps, "allreduce_bytes_per_step": sum(reduced) / steps,
            "profiled_steps": steps}


def job_comm(per_rank: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The ranks' mean shares (each rank's collectives include its waits for the others, so the
    mean is the job's time in collectives); the counts are rank 0's (every rank runs the same)."""
    ranks = [r for r in per_rank if r is not None]
    if not ranks:
        return None
    mean = lambda k: sum(r[k] for r in ranks) / len(ranks)  # noqa: E731
    return {"comm_share": mean("comm_share"), "exposed_share": mean("exposed_share"),
            "collectives_per_step": ranks[0]["collectives_per_step"],
            "allreduce_bytes_per_step": ranks[0]["allreduce_bytes_per_step"], "ranks_profiled": len(ranks)}


def scaling_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per rank count (rows with `nproc`, `job_tokens_per_s`, `step_time_s`, the collectives'
    `exposed_share`): efficiency against the 1-rank row and the share of the lost step time that
    the exposed collectives explain. `lost_s` = step(N) − step(1): with the same tokens per rank
    step, efficiency = step(1)/step(N), so this is all of what is lost."""
    one = next((r for r in rows if r["nproc"] == 1), None)
    out = []
    for r in rows:
        e = efficiency(r["job_tokens_per_s"], r["nproc"], one["job_tokens_per_s"]) if one else None
        step1, step = (one["step_time_s"] if one else None), r["step_time_s"]
        lost_s = step - step1 if step1 is not None else None
        exp = r.get("exposed_share")
        explained = (exp * step / lost_s if exp is not None and lost_s and lost_s > 0 else None)
        out.append({**r, "efficiency": e, "lost_s": lost_s, "explained_by_comm": explained})
    return out

