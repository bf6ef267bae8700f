"""Throughput, TFLOPS, MFU and HFU from seconds and FLOPs.

Pure functions in the style of Lightning's `Throughput`: they take numbers and return
numbers, never read a clock or a device, so tests can check them against hand arithmetic.

    tokens/s = tokens / seconds
    TFLOPS   = FLOPs / seconds / 1e12
    MFU      = model FLOPs/s    / peak FLOP/s   (model FLOPs: what the maths needs)
    HFU      = hardware FLOPs/s / peak FLOP/s   (hardware FLOPs: + recomputed forward)

(Definitions: PaLM, Chowdhery et al. 2022, App. B; Korthikanti et al. 2022 for HFU.)
"""

from __future__ import annotations

import statistics
from typing import Sequence

from trainprof.analysis.run.step_split import phase_split, phases
from trainprof.analysis.run.step_split import seconds as phase_seconds
from trainprof.recordtypes.run import StepRecord, Summary


def per_second(amount: float, seconds: float) -> float:
    """`amount / seconds`; a zero or negative duration is a bug upstream, not a metric."""
    if seconds <= 0:
        raise ValueError(f"duration must be > 0 s, got {seconds!r}")
    return amount / seconds


def tflops(flops: float, seconds: float) -> float:
    return per_second(flops, seconds) / 1e12


def utilisation(flops: float, seconds: float, peak_tflops: float | None) -> float | None:
    """Fraction of the peak achieved; None when the peak is unknown (never a guess)."""
    if peak_tflops is None:
        return None
    if peak_tflops <= 0:
        raise ValueError(f"peak must be > 0 TFLOP/s, got {peak_tflops!r}")
    return tflops(flops, seconds) / peak_tflops


def default_warmup(n_steps: int, requested: int | None = None) -> int:
    """Steps to leave out of the summary: allocator warm-up, cuDNN/compile autotuning.

    The requested number is honoured but always leaves at least one measured step.
    """
    if n_steps <= 0:
        return 0
    w = 1 if requested is None else max(0, requested)
    return min(w, n_steps - 1)


def summarise(
    steps: Sequence[StepRecord],
    *,
    flops_per_step: float,
    hardware_flops_per_step: float | None = None,
    peak_tflops: float | None,
    warmup_steps: int = 1,
    peak_memory_bytes: int | None = None,
    peak_memory_kind: str = "unknown",
    val_loss: float | None = None,
) -> Summary:
    """Aggregate the measured steps (those after `warmup_steps`).

    Step time is the mean over measured steps (total time / steps), so tokens/s and MFU are
    totals divided by totals; the median is reported beside it for noisy machines.
    """
    if not steps:
        raise ValueError("no steps to summarise")
    warm = min(max(0, warmup_steps), len(steps) - 1)
    measured = list(steps[warm:])
    total_s = sum(s.step_time_s for s in measured)
    n = len(measured)
    tokens = sum(s.tokens for s in measured)
    hw = flops_per_step if hardware_flops_per_step is None else hardware_flops_per_step
    phase_means = {p: sum(phase_seconds(s, p) for s in measured) / n for p in phases(*measured)}
    losses = [s.loss for s in steps if s.loss is not None]
    return Summary(
        measured_steps=n,
        warmup_steps=warm,
        step_time_s=total_s / n,
        step_time_median_s=statistics.median(s.step_time_s for s in measured),
        **phase_means,
        tokens_per_step=round(tokens / n),
        tokens_per_s=per_second(tokens, total_s),
        flops_per_step=flops_per_step,
        hardware_flops_per_step=hw,
        tflops=tflops(flops_per_step * n, total_s),
        hardware_tflops=tflops(hw * n, total_s),
        mfu=utilisation(flops_per_step * n, total_s, peak_tflops),
        hfu=utilisation(hw * n, total_s, peak_tflops),
        peak_memory_bytes=peak_memory_bytes,
        peak_memory_kind=peak_memory_kind,
        loss_first=losses[0] if losses else None,
        loss_last=losses[-1] if losses else None,
        val_loss=val_loss,
        phase_split=phase_split(measured),
    )


def straggler(step_time_s: dict[int, float]) -> tuple[int, float]:
    """(the slowest rank, its mean step time's excess over the ranks' median, %) of a job whose
    ranks run in lockstep: its step time is the slowest rank's (`run --nproc`, `profile`)."""
    med = statistics.median(step_time_s.values())
    slow = max(step_time_s, key=lambda r: (step_time_s[r], -r))
    return slow, 100.0 * (step_time_s[slow] - med) / med if med > 0 else 0.0
