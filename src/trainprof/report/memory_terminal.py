"""`trainprof memory` in the terminal: breakdown vs measured, the batch search, the ladder.

Renders a `trainprof.memory/1` record (recordtypes.memory.Memory; its analytic `breakdown`
stays a dict of named terms); computes nothing but differences and ratios."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from trainprof.recordtypes.memory import Memory
from trainprof.report.figures import show
from trainprof.report.fit import FitTable
from trainprof.report.formatting import size


def _ratio(a: int | None, b: int | None) -> str:
    return "—" if a is None or not b else f"{a / b:.2f}×"


def _opt(optimizer: str) -> str:
    return "Adafactor" if optimizer == "adafactor" else f"{optimizer} AdamW"


def breakdown_table(r: Memory) -> Table:
    bd, c = r.breakdown, r.config
    p = bd["params"]
    mp = bd["inputs"]
    t = FitTable(title=f"Memory: {r.model.preset} ({p / 1e6:.2f}M params), micro-batch {c['micro_batch']} × "
              f"{c['seq_len']} tokens, {c['dtype']}, {c['attention']} attention, {_opt(c['optimizer'])}",
              title_justify="left")
    t.add_column("term")
    t.add_column("formula")
    t.add_column("analytic", justify="right")
    fp = "fp32" if c["dtype"] == "fp32" else "autocast"
    t.add_row("weights (fp32 master)", "4 B/param", show(bd["params_bytes"], "bytes", "memory.breakdown.params_bytes"))
    if bd["weights_16bit_bytes"]:
        t.add_row("16-bit weight copies", "2 B/matmul param (autocast cache)", show(bd["weights_16bit_bytes"], "bytes", "memory.breakdown.weights_16bit_bytes"))
    t.add_row("gradients", "4 B/param (fp32)", show(bd["grads_bytes"], "bytes", "memory.breakdown.grads_bytes"))
    t.add_row("AdamW states", "8 B/param (m, v fp32)", show(bd["optimizer_bytes"], "bytes", "memory.breakdown.optimizer_bytes"))
    t.add_row("optimizer step temporaries", {"foreach": "4 B/param (foreach √v)",
                                             "forloop": "2 × largest param", "fused": "none"}[mp["optimizer"]],
              show(bd["optimizer_temporaries_bytes"], "bytes", "memory.breakdown.optimizer_temporaries_bytes"))
    t.add_row("activations, per layer", f"{fp}, no dropout" + (", SDPA" if mp["attention"] == "sdpa" else ""),
              show(bd["activations_per_layer_bytes"], "bytes", "memory.breakdown.activations_per_layer_bytes"))
    t.add_row("  Korthikanti et al. 2022", "s·b·h·(34 + 5·a·s/h), 16-bit",
              show(bd["korthikanti_per_layer_16bit_bytes"], "bytes", "memory.breakdown.korthikanti_per_layer_16bit_bytes"))
    t.add_row("activations, all layers + head", f"{mp['n_layer']} layers, no checkpointing",
              show(bd["activations_no_checkpointing_bytes"], "bytes", "memory.breakdown.activations_no_checkpointing_bytes"))
    t.add_row("  with checkpointing", "block inputs + 1 recomputed layer", show(bd["activations_checkpointing_bytes"], "bytes", "memory.breakdown.activations_checkpointing_bytes"))
    t.add_row("logits / loss temporaries", "12 B × B·T·V (fp32)", show(bd["logits_bytes"], "bytes", "memory.breakdown.logits_bytes"))
    t.add_row("backward working set", "MLP act. grads + head grad", show(bd["backward_working_set_bytes"], "bytes", "memory.breakdown.backward_working_set_bytes"))
    t.add_row("[bold]peak (analytic)[/]", f"in {bd['peak_phase']}",
              f"[bold]{show(bd['peak_bytes'], 'bytes', 'memory.breakdown.peak_bytes')}[/]")
    above = r.measured_above_baseline_bytes
    if r.device.kind == "cpu":
        t.add_row("[bold]measured peak[/]", f"RSS above a {size(r.baseline_bytes)} baseline "
                  f"({_ratio(above, bd['peak_bytes'])} analytic)", f"[bold]{show(above, 'bytes', 'memory.measured_above_baseline_bytes')}[/]")
        t.add_row("measured peak, raw", "process peak RSS", show(r.measured_peak_bytes, "bytes", "memory.measured_peak_bytes"))
    else:
        t.add_row("[bold]measured peak[/]", f"allocator peak ({_ratio(above, bd['peak_bytes'])} analytic)",
                  f"[bold]{show(above, 'bytes', 'memory.measured_above_baseline_bytes')}[/]")
    return t


def search_table(r: Memory) -> Table:
    s = r.search
    limit = f"{size(s.limit_bytes)} ({r.device.limit_source})" if s.limit_bytes is not None else "the whole device"
    t = FitTable(title=f"Largest micro-batch at seq {s.seq_len}: limit {limit}", title_justify="left")
    for col in ("probe", "micro-batch", "peak above baseline", "result"):
        t.add_column(col, justify="left" if col == "result" else "right")
    for i, p in enumerate(s.probes, 1):
        res = "fits" if p.fits else f"[red]OOM[/] {p.reason}" if p.reason else "[red]OOM[/]"
        t.add_row(str(i), str(p.micro_batch), size(p.measured_above_baseline_bytes), res)
    return t


def ladder_table(r: Memory) -> Table:
    t = FitTable(title="Memory ladder (each step keeps the ones above; peaks per rank)", title_justify="left")
    for col in ("step", "change", "measured", "vs prev", "plan", "step time"):
        t.add_column(col, justify="left" if col in ("step", "change") else "right")
    prev = None
    for i, rung in enumerate(r.ladder):
        f = f"memory.ladder[{i}]"
        above = rung.measured_above_baseline_bytes
        planned = rung.planned_peak_bytes if isinstance(rung.planned_peak_bytes, int) else None
        if rung.status == "not run":
            gpu = f"{show(planned, 'bytes', f + '.planned_peak_bytes')} (GPU)" if planned is not None else "—"
            t.add_row(rung.step, f"{rung.change} [dim](not run)[/]", "—", "—", gpu, "—")
            continue
        delta = "—" if prev is None or above is None else f"{100 * (above - prev) / prev:+.0f}%"
        shown = show(above, "bytes", f + ".measured_above_baseline_bytes")
        peak = shown if rung.status == "ok" else f"[red]OOM[/] {shown}"
        t.add_row(rung.step, rung.change, peak, delta, show(planned, "bytes", f + ".planned_peak_bytes"),
                  show(rung.step_time_s, "s", f + ".step_time_s"))
        prev = above if above is not None else prev
    return t


def print_memory(r: Memory, con: Console) -> None:
    con.print(breakdown_table(r))
    rules = r.breakdown["bytes_per_param"]
    con.print("Per parameter: " + "; ".join(f"{k} {v['total']} B" for k, v in rules.items()))
    if r.search is not None:
        con.print(search_table(r))
        s = r.search
        mb = s.max_micro_batch
        if s.stopped == "nothing fits":
            con.print("[bold]max micro-batch: 0[/] (one sequence does not fit the limit)")
        else:
            extra = " (the search cap)" if s.stopped == "cap" else f"; {mb + 1} does not"
            con.print(f"[bold]max micro-batch: {mb}[/] at seq {s.seq_len}{extra}")
        if s.fit:
            f = s.fit
            con.print(f"Measured per sequence: {size(int(f['per_sample_bytes']))} (analytic "
                      f"{size(s.analytic_per_sample_bytes)}, {_ratio(f['per_sample_bytes'], s.analytic_per_sample_bytes)}); "
                      f"fixed part {size(int(f['fixed_bytes']))} (line through {f['points']} fitting probes)")
    if len(r.ladder) > 1:
        con.print(ladder_table(r))
        for rung in r.ladder:
            if rung.status == "not run":
                con.print(f"[dim]{rung.step}: {rung.note}[/]")
    if r.device.kind == "cpu":
        con.print("[dim]CPU: peaks are resident memory above a baseline taken before the model exists "
                  "(the interpreter and torch, ~300 MB); buffers ≥ 64 KiB are mapped one by one, so RSS "
                  "follows live tensors; the runtime (data, Python objects) adds ~10 MB.[/]")
