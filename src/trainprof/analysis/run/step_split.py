"""Where the step's time goes, robust to noise: the measured split, phases driven by a few
outlier steps, the principal bottleneck class, and whether the machine was contended.

Pure functions over run.json's per-step records (recordtypes/run.StepRecord, seconds) and
its `system` and `environment` blocks (a RunRecord); thresholds are parameters (diagnose.Thresholds), documented in
docs/rules.md.

A phase's mean can be inflated by a few slow steps (a page fault storm, a descheduled
thread on a shared machine): on a CPU run where forward + backward took 88% of the step, a
10%-mean optimizer made of two 20× outliers read as "host overhead". So each phase is
judged by its mean *and* its median:

    outlier-driven  ⇔  mean ≥ ratio · median  and  (mean − median) ≥ min_share · mean step

and an outlier-driven phase is reported with its median share (median phase / median step).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from msgspec import UNSET

if TYPE_CHECKING:
    from trainprof.recordtypes.run import RunRecord, StepRecord

PHASES = ("data_s", "h2d_s", "forward_s", "backward_s", "optimizer_s", "other_s")
# A pipeline stage's waits, sends and receives (the bubble): only in a run that has them (`run
# --pp`), after backward_s (phases()); communication, not host overhead, for the diagnosis
PIPELINE = "pipeline_s"
# The phases in words (diff's table and story; the run's own report heads its columns "data", "h2d", ...)
PHASE_LABEL = {"data_s": "data wait", "h2d_s": "host-to-device copy", "forward_s": "forward",
               "backward_s": "backward", "optimizer_s": "optimizer", "other_s": "other",
               PIPELINE: "pipeline wait"}
# The bottleneck class each phase's time belongs to (diagnose.finding.BOTTLENECKS). The
# optimizer is host overhead as in the optimizer_bound rule: an unfused AdamW pays per-tensor
# loop and launch costs that a fused one removes.
CLASS = {"data_s": "data", "h2d_s": "data", "forward_s": "compute", "backward_s": "compute",
         "optimizer_s": "host overhead", "other_s": "host overhead", PIPELINE: "communication"}


def phases(*records: object) -> tuple[str, ...]:
    """The phase fields of these StepRecords or Summaries: PHASES, with PIPELINE after
    backward_s when any of them has it."""
    if not any(getattr(r, PIPELINE, UNSET) is not UNSET for r in records):
        return PHASES
    return PHASES[:4] + (PIPELINE,) + PHASES[4:]


def seconds(record: object, phase: str) -> float:
    """A phase field's seconds; 0 where a record lacks it (PIPELINE outside a pipeline)."""
    v = getattr(record, phase, UNSET)
    return 0.0 if v is UNSET else float(v)


@dataclass(frozen=True)
class PhaseShare:
    phase: str  # a StepRecord field: data_s, forward_s, ...
    mean_s: float
    median_s: float
    mean_share_pct: float  # mean phase / mean step
    median_share_pct: float  # median phase / median step
    outlier_driven: bool  # the mean is driven by a few slow steps

    @property
    def share_pct(self) -> float:
        """The share to report and to act on: the median's when a few steps drive the mean."""
        return self.median_share_pct if self.outlier_driven else self.mean_share_pct


MIN_STEPS_FOR_MEDIAN = 3  # with 2 measured steps the median is their mean: no outlier can be told apart


def phase_split(steps: Sequence[StepRecord], ratio: float = 1.5, min_share_pct: float = 2.0) -> dict[str, dict]:
    """run.json's `summary.phase_split` over the measured `steps`: per phase (StepRecord
    field) its mean and median, their shares of the mean and median step, and whether a few
    outlier steps drive its mean (never with fewer than MIN_STEPS_FOR_MEDIAN steps). The
    reports show these fields as they are (report/figures.py), so the terminal, report.md
    and report.html cannot disagree on a share; the defaults are diagnose.Thresholds'."""
    few = len(steps) < MIN_STEPS_FOR_MEDIAN
    return {p.phase: {"mean_s": p.mean_s, "mean_share_pct": p.mean_share_pct, "median_s": p.median_s,
                      "median_share_pct": p.median_share_pct, "outlier_driven": p.outlier_driven and not few}
            for p in phase_shares(steps, ratio, min_share_pct)}


def measured(steps: Sequence[StepRecord], warmup: int) -> list[StepRecord]:
    """The steps the summary counts (after warm-up); all of them if warm-up took every step."""
    return list(steps[warmup:]) or list(steps)


def phase_shares(steps: Sequence[StepRecord], ratio: float = 1.5, min_share_pct: float = 2.0) -> list[PhaseShare]:
    """Each phase's mean and median share of the measured `steps`."""
    if not steps:
        return []
    times = [s.step_time_s for s in steps]
    mean_t, med_t = statistics.fmean(times), statistics.median(times)
    out = []
    for p in phases(*steps):
        v = [seconds(s, p) for s in steps]
        mean, med = statistics.fmean(v), statistics.median(v)
        excess = 100.0 * (mean - med) / mean_t if mean_t > 0 else 0.0
        out.append(PhaseShare(
            phase=p, mean_s=mean, median_s=med,
            mean_share_pct=100.0 * mean / mean_t if mean_t > 0 else 0.0,
            median_share_pct=100.0 * med / med_t if med_t > 0 else 0.0,
            outlier_driven=mean >= ratio * med and excess >= min_share_pct))
    return out


def class_shares(shares: Sequence[PhaseShare]) -> dict[str, float]:
    """Reported share per bottleneck class (compute = forward + backward, ...), in %."""
    out: dict[str, float] = {}
    for s in shares:
        out[CLASS[s.phase]] = out.get(CLASS[s.phase], 0.0) + s.share_pct
    return out


def dominant(shares: Sequence[PhaseShare]) -> tuple[str, float] | None:
    """The class that takes the largest share of the step, and that share."""
    c = class_shares(shares)
    if not c:
        return None
    name = max(c, key=lambda k: (c[k], k == "compute"))  # a tie goes to compute
    return name, c[name]


def step_cv(steps: Sequence[StepRecord]) -> float | None:
    """Coefficient of variation of the step time (population stdev / mean)."""
    t = [s.step_time_s for s in steps]
    if len(t) < 2 or statistics.fmean(t) <= 0:
        return None
    return statistics.pstdev(t) / statistics.fmean(t)


def contention(run: RunRecord, cv_max: float, others_cpu_pct: float, steal_pct: float,
               load_per_core: float) -> list[str]:
    """The signs that the machine was shared while the run measured, in words (empty: none).

    cv_max: step-time coefficient of variation above which timings are noisy;
    others_cpu_pct: mean CPU share (of all cores) used by other processes;
    steal_pct: mean CPU time the hypervisor gave to other guests;
    load_per_core: mean 1-minute load average per core (our own threads are in it too, so
    only above 1 does something else queue for the cores)."""
    signs = []
    steps = measured(run.steps, run.summary.warmup_steps)
    cv = step_cv(steps)
    if cv is not None and cv > cv_max:
        signs.append(f"step times vary with a coefficient of variation of {cv:.2f} (> {cv_max:g})")
    sys = run.system_summary
    o = sys.others_cpu_pct.mean if sys is not None and sys.others_cpu_pct else None
    if o is not None and o >= others_cpu_pct:
        signs.append(f"other processes used {o:.0f}% of all cores' time (≥ {others_cpu_pct:g}%)")
    st = sys.steal_pct.mean if sys is not None and sys.steal_pct else None
    if st is not None and st >= steal_pct:
        signs.append(f"the hypervisor stole {st:.0f}% of CPU time (≥ {steal_pct:g}%)")
    load = sys.load_avg_1m.mean if sys is not None and sys.load_avg_1m else None
    cores = run.environment.get("cpu_count")
    if load is not None and cores and load / cores > load_per_core:
        signs.append(f"the 1-minute load average was {load:.1f} on {cores} cores (> {load_per_core:g} per core)")
    return signs
