"""Terminal output with rich: the per-step table, the run summary, the spec table."""

from __future__ import annotations

from typing import Sequence

from rich.console import Console
from rich.table import Table

from trainprof.report.console import escape
from trainprof.report.fit import FitTable

from trainprof.recordtypes.run import RunRecord, StepRecord
from trainprof.report.figures import show
from trainprof.report.text import visible
from trainprof.report.colours import phases_in
from trainprof.report.formatting import num, peak_provenance

SHORT = {"forward": "fwd", "backward": "bwd", "optimizer": "opt"}


def sample_rows(n: int, max_rows: int) -> list[int]:
    """Indices of at most `max_rows` steps, evenly spread, always the first and the last."""
    if n <= max_rows:
        return list(range(n))
    if max_rows < 2:
        return [n - 1]
    step = (n - 1) / (max_rows - 1)
    return sorted({round(i * step) for i in range(max_rows)})


def time_unit(steps: Sequence[StepRecord]) -> tuple[str, float, int]:
    """(unit, scale, decimals) for a column of step times: seconds once the median step takes
    a second (`1.868` instead of `1,868.3`: two characters narrower per column), else ms."""
    times = sorted(s.step_time_s for s in steps)
    median = times[len(times) // 2] if times else 0.0
    return ("s", 1.0, 3) if median >= 1.0 else ("ms", 1e3, 1)


def steps_table(steps: Sequence[StepRecord], warmup: int, max_rows: int = 16, batch_unit: str = "tokens") -> Table:
    """`batch_unit`: what a step's `tokens` count (RunRecord.batch_unit), the rate column's label."""
    rows = sample_rows(len(steps), max_rows)
    unit, scale, digits = time_unit(steps)
    title = "Steps" + ("" if len(rows) == len(steps) else f" ({len(rows)} of {len(steps)}; all in run.json)")
    t = FitTable(title=title + f"; times in {unit}, * = warm-up", title_justify="left")
    t.add_column("step", justify="right")
    t.add_column("time", justify="right")
    from trainprof.analysis.run.step_split import phases, seconds

    columns = phases_in(phases(*steps))  # the step's phases as every report names them (report/colours.py)
    for label, _, _ in columns:
        t.add_column(SHORT.get(label, label), justify="right")
    t.add_column(f"{batch_unit}/s", justify="right")
    t.add_column("loss", justify="right")
    for i in rows:
        s = steps[i]
        t.add_row(
            f"{s.step}{'*' if i < warmup else ''}", f"{s.step_time_s * scale:,.{digits}f}",
            *(f"{seconds(s, f) * scale:,.{digits}f}" for _, f, _ in columns),
            f"{s.tokens / s.step_time_s:,.0f}" if s.step_time_s > 0 else "—",
            num(s.loss),
        )
    return t


def split_text(split: dict) -> str:
    """run.json's summary.phase_split as one line: each phase's mean and share of the mean
    step, and for a phase a few slow steps drive, its median and share of the median step."""
    at = "run.summary.phase_split."
    parts = []
    for label, f, _ in phases_in(split):
        p = split.get(f) or {}
        text = (f"{label} {show(p.get('mean_s'), 's', at + f + '.mean_s')} "
                f"({show(p.get('mean_share_pct'), 'pct_value', at + f + '.mean_share_pct')}")
        if p.get("outlier_driven"):
            text += (f"; median {show(p['median_s'], 's', at + f + '.median_s')}, "
                     f"{show(p['median_share_pct'], 'pct_value', at + f + '.median_share_pct')}: a few slow steps")
        parts.append(text + ")")
    return ", ".join(parts)


def summary_table(rec: RunRecord) -> Table:
    s, d = rec.summary, rec.device
    t = FitTable(title="Summary", title_justify="left", show_header=False)
    t.add_column("metric", style="bold")
    t.add_column("value")
    how = peak_provenance(d.peak_measurement) or d.peak_source
    peak = "unknown (no MFU)" if d.peak_tflops is None else f"{d.peak_tflops:,.3f} TFLOP/s {d.peak_dtype} ({how})"
    # escape(): device names and "[cpu]" must not be parsed as rich markup
    t.add_row("device", escape(visible(f"{d.name} [{d.kind}]")) + (f" → {d.spec_key}" if d.spec_key else ""))
    t.add_row("peak", peak)
    prof = rec.profile  # `trainprof profile`: its warm-up steps are not in the record
    warm = prof.flops_step + 1 if prof is not None and prof.flops_step is not None else s.warmup_steps
    t.add_row("steps measured", f"{s.measured_steps} (after {warm} warm-up)")
    dist = rec.distributed
    if dist:
        t.add_row("ranks", f"{dist.world_size} × {dist.strategy} ({dist.backend}); job "
                  f"{dist.job_tokens_per_s:,.0f} {rec.batch_unit}/s; slowest rank {dist.straggler_rank} "
                  f"(+{dist.straggler_excess_pct:.1f}% vs median); figures below are rank 0's")
    at = "run.summary."
    t.add_row("step time", f"{show(s.step_time_s, 's', at + 'step_time_s')} mean, "
                           f"{show(s.step_time_median_s, 's', at + 'step_time_median_s')} median")
    t.add_row("split", split_text(s.phase_split or {}))
    unit = rec.batch_unit  # `profile` of a model fed features: samples
    t.add_row(f"{unit}/s", f"{show(s.tokens_per_s, 'num0', at + 'tokens_per_s')} "
                           f"({show(s.tokens_per_step, 'int', at + 'tokens_per_step')} {unit}/step)")
    t.add_row("model TFLOPS", f"{show(s.tflops, 'num3', at + 'tflops')} ({s.flops_per_step / 1e9:,.1f} GFLOP/step)")
    if s.hardware_flops_per_step != s.flops_per_step:
        t.add_row("hardware TFLOPS", f"{show(s.hardware_tflops, 'num3', at + 'hardware_tflops')} (with recomputation)")
    t.add_row("MFU / HFU", f"{show(s.mfu, 'pct_of_fraction', at + 'mfu')} / {show(s.hfu, 'pct_of_fraction', at + 'hfu')}")
    t.add_row("peak memory", f"{show(s.peak_memory_bytes, 'bytes', at + 'peak_memory_bytes')} ({s.peak_memory_kind})")
    t.add_row("loss", f"{show(s.loss_first, 'num3', at + 'loss_first')} → {show(s.loss_last, 'num3', at + 'loss_last')}")
    t.add_row("validation loss", show(s.val_loss, "num3", at + "val_loss"))
    return t


def print_run(rec: RunRecord, console: Console, max_rows: int = 16) -> None:
    console.print(steps_table(rec.steps, rec.summary.warmup_steps, max_rows, rec.batch_unit))
    console.print(summary_table(rec))
    if rec.system:
        from trainprof.report.system_terminal import system_table

        console.print(system_table(rec.system))
    if rec.memory_snapshot:
        from trainprof.report.system_terminal import memory_snapshot_table

        console.print(memory_snapshot_table(rec.memory_snapshot))
    print_context(rec, None, console)
    for w in rec.warnings:
        console.print(f"[yellow]warning:[/] {escape(visible(w))}")  # a warning may quote a path or a name


def print_context(run: RunRecord | None, analysis, console: Console) -> None:
    """The headline figures' references and the flowchart's path (report/context.py): run.json's
    as stored (with its trace analysis where profiled)."""
    from trainprof.diagnose.flowchart import path_text
    from trainprof.report.context import chart, reference_rows

    rows = reference_rows(run)
    if rows:
        t = FitTable(title="Reference", title_justify="left", show_header=False)
        t.add_column("figure", style="bold")
        t.add_column("value")
        t.add_column("reference")
        for r in rows:
            t.add_row(r["figure"], r["value"], escape(r["reference"]))
        console.print(t)
    c = chart(analysis, run)
    if c is not None:
        console.print(f"[bold]Flowchart (seed 002):[/] {escape(path_text(c))}")
