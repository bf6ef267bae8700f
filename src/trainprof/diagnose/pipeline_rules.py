"""The pipeline-bubble finding (analysis/job/bubble.py): how much of the schedule the stages
spend waiting for their neighbours, how much of it the schedule itself costs, and the fix.

- The inherent bubble (p − 1)/(m + p − 1) shrinks with more micro-batches (the what-if: 2m)
  or an interleaved schedule (v model chunks per stage divide it by v: Narayanan et al. 2021).
- An excess over it with one stage computing longer than the others is imbalance: move
  layers off that stage (the others wait for it at every micro-batch).
- An excess without imbalance is waiting on the links or on stragglers (the per-axis table).

gain = the bubble share a fix could recover, an upper bound: excess + the inherent part the
what-if removes.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainprof.diagnose.finding import Finding, severity
from trainprof.diagnose.registry import rule
from trainprof.recordtypes.collectives import JobPipeline


@dataclass(frozen=True)
class PipelineThresholds:
    bubble_pct: float = 5.0
    """pipeline_bubble: fires when the stages' mean bubble is ≥ this % of the schedule's window"""
    imbalance_pct: float = 5.0
    """... and names a stage to rebalance when it computes ≥ this % longer than the others' mean"""


@rule("pipeline_bubble", scope="job")
def pipeline_findings(jp: JobPipeline | None, th: PipelineThresholds | None = None) -> list[Finding]:
    th = th or PipelineThresholds()
    out = []
    for p in (jp.pipelines if jp else []):
        if p.measured_pct < th.bubble_pct:
            continue
        slow = p.per_stage[p.slowest_stage]
        others = [s for s in p.per_stage if s.stage != slow.stage]
        excess_us = sum(max(0.0, s.excess_us) for s in others) / max(1, len(others))
        mean_busy = sum(s.busy_us for s in others) / max(1, len(others))
        imbalanced = mean_busy > 0 and 100.0 * slow.imbalance_us / mean_busy >= th.imbalance_pct
        gain = max(0.0, min(p.measured_pct, max(0.0, p.excess_pct) + p.inherent_pct - p.what_if_inherent_pct))
        stages = ", ".join(str(r) for r in p.ranks)
        evidence = (f"pipeline of ranks {stages} ({p.schedule or 'schedule unknown'}, p = {p.stages}, m = "
                    f"{p.microbatches}, {len(p.steps)} steps): the stages wait {p.measured_pct:.1f}% of the "
                    f"schedule's window for their neighbours; the schedule itself costs (p−1)/(m+p−1) = "
                    f"{p.inherent_pct:.1f}%, the excess is {p.excess_pct:.1f} points")
        fix = (f"more micro-batches: m = {p.what_if_microbatches} → bubble {p.what_if_inherent_pct:.1f}% "
               f"(saves ~{p.what_if_gain_us / 1e3 / len(p.steps):,.1f} ms a step if the micro-batches stay "
               "efficient); an interleaved schedule (ScheduleInterleaved1F1B, v chunks per stage) divides "
               "the inherent bubble by v")
        if imbalanced:
            evidence += (f"; stage {slow.stage} (rank {slow.rank}) computes {slow.imbalance_us / 1e3:,.1f} ms longer "
                         f"than the other stages' mean over the steps, and they waited {excess_us / 1e3:,.1f} ms "
                         "beyond the schedule's bubble for it")
            fix = (f"rebalance the stages: move layers off stage {slow.stage} (rank {slow.rank}), or look for what "
                   f"only it does (its excess is the imbalance, not the schedule); then {fix}")
        out.append(Finding(
            id="pipeline_bubble", severity=severity(gain),
            title=(f"Pipeline stage {slow.stage} (rank {slow.rank}) holds the pipeline: the others wait for it"
                   if imbalanced else f"Pipeline bubble: {p.measured_pct:.0f}% of the schedule is waiting"),
            evidence=evidence, estimated_gain_pct=round(gain, 2), fix=fix,
            confidence="high" if imbalanced else "medium", bottleneck="communication"))
    return out
