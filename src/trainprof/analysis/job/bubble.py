"""The pipeline bubble per stage and step, from the stages' schedule ranges on one clock.

Input: each stage's steps (analysis/job/pipeline_rank.py: busy time inside its forward and
backward ranges, the ranges' first start and last end) and the ranks' clock offsets (the
matched collectives', analysis/job/collectives_job.py). A pipeline is a group that carries
send/recv; its stages are its ranks in order (DeviceMesh and torch.distributed.pipelining
both number the stages along the `pp` dimension).

Per step, for p stages and m micro-batches:

    window      = max_s end_s − min_s start_s                 (the schedule, every stage)
    bubble_s    = window − busy_s                             (stage s not computing)
    inherent_s  = (p − 1)/m · busy_s                          (the schedule's own bubble)
    excess_s    = bubble_s − inherent_s                       (imbalance, slow links, stragglers)

With balanced stages of t per micro-batch (forward + backward), GPipe and 1F1B take
window = (m + p − 1)·t and busy = m·t, so bubble/window = (p − 1)/(m + p − 1) (GPipe, Huang
et al. 2019; 1F1B, Narayanan et al. 2021, same bubble, less memory) and the excess is 0.
When stage k computes d longer per step than the others, each other stage's excess is
about d: the one to fix is the stage with the most busy time (`slowest_stage`, with
`imbalance_us`), not the ones that wait for it.

What-if: with 2m micro-batches of half the size, each stage's inherent bubble halves:
(p − 1)·t/2 saved per step on the bottleneck stage, bubble (p − 1)/(2m + p − 1).
"""

from __future__ import annotations

import statistics

from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.collectives import (JobCollectives, JobPipeline, PipelineBubble, RankCollectives,
                                               StageBubble)
from trainprof.vocab import collectives as cv


def inherent_fraction(p: int, m: int) -> float:
    """(p − 1)/(m + p − 1): the bubble of GPipe and 1F1B."""
    return (p - 1) / (m + p - 1) if m + p > 1 else 0.0


def pipelines(blocks: dict[int, RankCollectives]) -> list[list[int]]:
    """The ranks of each group that carries send/recv, in stage order, where every rank has
    schedule ranges."""
    listed = {g.name: list(g.ranks) for b in blocks.values() for g in or_default(b.process_groups, None) or []}
    out, seen = [], set()
    for b in blocks.values():
        for g, op in zip(b.group, b.op):
            if op in cv.ONE_SIDED and g not in seen:
                seen.add(g)
                ranks = listed.get(g) or sorted(blocks)
                if len(ranks) > 1 and all(r in blocks and or_default(blocks[r].pipeline, None) for r in ranks):
                    out.append(ranks)
    return out


def job_pipeline(blocks: dict[int, RankCollectives], job: JobCollectives | None) -> JobPipeline | None:
    offsets = {x.rank: x.clock_offset_us for x in job.per_rank} if job else {}
    out = [b for ranks in pipelines(blocks) if (b := _one(ranks, blocks, offsets)) is not None]
    return JobPipeline(pipelines=out) if out else None


def _one(ranks: list[int], blocks: dict[int, RankCollectives], offsets: dict[int, float]) -> PipelineBubble | None:
    p = len(ranks)
    per = {r: {s.step: s for s in blocks[r].pipeline.steps} for r in ranks}
    steps = sorted(set.intersection(*(set(x) for x in per.values())))
    if not steps:
        return None
    m = int(statistics.median(per[r][n].microbatches for r in ranks for n in steps))
    if m < 1:
        return None
    mesh = next((or_default(blocks[r].mesh, None) for r in ranks if or_default(blocks[r].mesh, None)), None)
    busy = {r: 0.0 for r in ranks}
    bubble = {r: 0.0 for r in ranks}
    recv = {r: 0.0 for r in ranks}
    window, per_step = 0.0, []
    for n in steps:
        xs = {r: per[r][n] for r in ranks}
        lo = min(x.start_us - offsets.get(r, 0.0) for r, x in xs.items())
        hi = max(x.end_us - offsets.get(r, 0.0) for r, x in xs.items())
        w = hi - lo
        window += w
        per_step.append(100.0 * statistics.mean((w - x.busy_us) / w for x in xs.values()) if w > 0 else 0.0)
        for r, x in xs.items():
            busy[r] += x.busy_us
            bubble[r] += w - x.busy_us
            recv[r] += x.recv_wait_us
    frac = (p - 1) / m
    rows = []
    for i, r in enumerate(ranks):
        others = [busy[q] for q in ranks if q != r]
        inh = frac * busy[r]
        rows.append(StageBubble(stage=i, rank=r, busy_us=busy[r], bubble_us=bubble[r],
                                bubble_pct=100.0 * bubble[r] / window if window > 0 else 0.0,
                                inherent_us=inh, excess_us=bubble[r] - inh, recv_wait_us=recv[r],
                                imbalance_us=busy[r] - statistics.mean(others)))
    measured = statistics.mean(x.bubble_pct for x in rows)
    inherent = 100.0 * inherent_fraction(p, m)
    slowest = max(rows, key=lambda x: (x.busy_us, -x.stage))
    return PipelineBubble(
        ranks=ranks, schedule=mesh.schedule if mesh else None, stages=p, microbatches=m, steps=steps,
        window_us=window, inherent_pct=inherent, measured_pct=measured, excess_pct=measured - inherent,
        per_stage=rows, slowest_stage=slowest.stage, what_if_microbatches=2 * m,
        what_if_inherent_pct=100.0 * inherent_fraction(p, 2 * m),
        what_if_gain_us=(p - 1) * slowest.busy_us / (2 * m), per_step_pct=per_step)
