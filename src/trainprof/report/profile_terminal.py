"""`trainprof profile`'s own table: how the program's steps were found and measured."""

from __future__ import annotations

from typing import Any

from trainprof.report.console import escape

from trainprof.controls import shell_join
from trainprof.recordtypes.run import RunRecord
from trainprof.recordtypes.run_parts import Profile
from trainprof.report.fit import FitTable
from trainprof.report.text import visible_tree
from trainprof.report.formatting import duration


def _span(a: Any, b: Any) -> str:
    return f"{a}" if a == b else f"{a}–{b}"


def profile_table(run: RunRecord) -> FitTable:
    """The program, its step boundary, the window, micro-batches, batch unit and dtype, and
    the profiler's cost, from run.json's "command", "status", "profile" and "config". Every
    string is shown, never sent (controls.py): the command as it would be pasted (shell_join),
    the rest through visible_tree."""
    command = shell_join(run.command or [])
    run = visible_tree(run)
    p, c, m, s = run.profile or Profile(), run.config, run.model, run.summary
    v = p.value  # UNSET (a key older records lack) and null read None
    t = FitTable(title="Profile", title_justify="left", show_header=False)
    t.add_column("what", style="bold")
    t.add_column("value")
    code = run.exit_code
    t.add_row("program", escape(command) + f"  \\[{escape(str(run.status))}"
              + (f", exit code {code}" if code is not None else "") + "]")
    t.add_row("one step", escape(str(p.boundary)) + f"; {p.steps_seen} steps seen")
    check = f", checked on step {v('flops_check_step')}" if v("flops_check_step") is not None else ""
    window = f"warm-up {_span(0, p.flops_step)} (FLOPs counted on step {p.flops_step}{check})"
    if v("measured_steps"):
        window += f", measured {_span(*p.measured_steps)}"
    if v("profiled_steps"):
        window += f", profiled {_span(*p.profiled_steps)}"
    if not p.window_complete:
        window += " (the program ended first)"
    t.add_row("window", window)
    accum = v("backward_passes_per_step") or 0
    t.add_row("micro-batches", f"{v('micro_batches_per_step')} per step, {accum} backward pass"
              + ("es" if accum != 1 else "") + " per step" + ("  (gradient accumulation)" if accum > 1 else ""))
    unit = run.batch_unit
    shape = v("batch_shape")
    t.add_row("batch", f"{s.tokens_per_step:,} {unit} per step" + (f" (first input {tuple(shape)})" if shape else ""))
    model = escape(str(m.get("class"))) + (f" in {escape(m['wrapper'])}" if m.get("wrapper") else "")
    if m.get("params"):
        model += f", {m['params']:,} parameters"
    t.add_row("model", model)
    t.add_row("dtype", escape(f"{c.get('dtype')} (from {v('dtype_from')})"))
    if c.get("batch_layout", "batch-first") != "batch-first":
        t.add_row("layout", escape(str(c["batch_layout"])) + ": the first input is (sequence, batch, ...)")
    flops = run.flops or {}
    if flops.get("parts_per_step"):
        t.add_row("FLOPs", flops_text(flops))
    if flops.get("coverage"):
        t.add_row("FLOPs cover", escape(coverage_text(flops["coverage"])))
    over = v("profiler_overhead_pct")
    if over is not None and p.profiled_step_median_s is not None:
        t.add_row("profiler cost", f"{over:+.0f}% per profiled step ({duration(p.profiled_step_median_s, 's', 'step')} median under "
                  f"torch.profiler vs {duration(p.measured_step_median_s, 's', 'step')} measured)")
    costs = window_costs_text(p.window_costs or {})
    if costs:
        t.add_row("trainprof's cost", costs)
    for w in p.warnings or []:
        t.add_row("warning", escape(w))
    return t


def flops_text(flops: dict[str, Any]) -> str:
    """What the FLOP count holds: the steps counted, the training parts, and what was left out."""
    parts = flops["parts_per_step"]
    steps = flops.get("counted_steps") or [flops.get("counted_step")]
    text = (f"{flops['model_flops_per_step']:.4g} per step (steps {', '.join(map(str, steps))}; forward "
            f"{parts['forward']:.3g} + backward {parts['backward']:.3g})")
    if parts.get("recompute"):
        text += f"; recomputed by checkpointing {parts['recompute']:.3g} (in HFU, not in MFU)"
    if parts.get("excluded"):
        text += f"; left out: {parts['excluded']:.3g} without gradients (evaluation, generation)"
    return text


def window_costs_text(c: dict[str, Any]) -> str:
    """trainprof's own work inside the window, each figure as measured: none of it falls in a
    measured step, and the program waited for each."""
    out = []
    if c.get("flop_counted_step_s"):
        ratio = c.get("flop_counted_step_ratio")
        out.append(f"FLOP-counted steps {', '.join(duration(x, 's', 'step') for x in c['flop_counted_step_s'])}"
                   + (f" ({ratio:.1f}× a measured step)" if ratio else ""))
    if c.get("peak_check_s") is not None:
        out.append(f"CPU peak check {duration(c['peak_check_s'], 's', 'step')} (in another process)")
    if c.get("trace_write_s") is not None:
        out.append(f"trace written in {duration(c['trace_write_s'], 's', 'step')} (one step held)")
    return "; ".join(out)

def coverage_text(c: dict[str, Any]) -> str:
    what = "GPU time" if c.get("metric") == "gpu" else "self CPU time"
    text = f"{c['covered_pct']:.0f}% of the top operators' {what}"
    if c.get("uncovered"):
        text += "; not counted: " + ", ".join(f"{u['name']} {u['share_pct']:.1f}% ({u['kind']})" for u in c["uncovered"][:3])
    if c.get("not_inspected_pct"):
        text += f"; {c['not_inspected_pct']:.0f}% outside the top operators"
    return text