"""`trainprof profile`'s own table: how the program's steps were found and measured."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from trainprof.controls import shell_join
from trainprof.recordtypes.run import RunRecord
from trainprof.report.fit import FitTable
from trainprof.report.text import visible_tree
from trainprof.report.units import ms


def _span(a: Any, b: Any) -> str:
    return f"{a}" if a == b else f"{a}–{b}"


def profile_table(run: RunRecord) -> FitTable:
    """The program, its step boundary, the window, micro-batches, batch unit and dtype, and
    the profiler's cost, from run.json's "command", "status", "profile" and "config". Every
    string is shown, never sent (controls.py): the command as it would be pasted (shell_join),
    the rest through visible_tree."""
    command = shell_join(run.command or [])
    run = visible_tree(run)
    p, c, m, s = run.profile or {}, run.config, run.model, run.summary
    t = FitTable(title="Profile", title_justify="left", show_header=False)
    t.add_column("what", style="bold")
    t.add_column("value")
    code = run.exit_code
    t.add_row("program", escape(command) + f"  \\[{escape(str(run.status))}"
              + (f", exit code {code}" if code is not None else "") + "]")
    t.add_row("one step", escape(str(p.get("boundary"))) + f"; {p.get('steps_seen')} steps seen")
    window = f"warm-up {_span(0, p.get('flops_step'))} (FLOPs counted on step {p.get('flops_step')})"
    if p.get("measured_steps"):
        window += f", measured {_span(*p['measured_steps'])}"
    if p.get("profiled_steps"):
        window += f", profiled {_span(*p['profiled_steps'])}"
    if not p.get("window_complete"):
        window += " (the program ended first)"
    t.add_row("window", window)
    accum = p.get("backward_passes_per_step") or 0
    t.add_row("micro-batches", f"{p.get('micro_batches_per_step')} per step, {accum} backward pass"
              + ("es" if accum != 1 else "") + " per step" + ("  (gradient accumulation)" if accum > 1 else ""))
    unit = run.batch_unit
    shape = p.get("batch_shape")
    t.add_row("batch", f"{s.tokens_per_step:,} {unit} per step" + (f" (first input {tuple(shape)})" if shape else ""))
    model = escape(str(m.get("class"))) + (f" in {escape(m['wrapper'])}" if m.get("wrapper") else "")
    if m.get("params"):
        model += f", {m['params']:,} parameters"
    t.add_row("model", model)
    t.add_row("dtype", escape(f"{c.get('dtype')} (from {p.get('dtype_from')})"))
    over = p.get("profiler_overhead_pct")
    if over is not None and p.get("profiled_step_time_s"):
        prof = sorted(p["profiled_step_time_s"])[len(p["profiled_step_time_s"]) // 2]
        t.add_row("profiler cost", f"{over:+.0f}% per profiled step ({ms(prof)} median under torch.profiler vs "
                  f"{ms(s.step_time_median_s)} measured)")
    for w in p.get("warnings") or []:
        t.add_row("warning", escape(w))
    return t
