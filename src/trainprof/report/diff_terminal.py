"""Terminal and Markdown rendering of a trace diff (analysis/job/diff.py)."""

from __future__ import annotations

from rich.console import Console

from trainprof.analysis.job.diff import CAUSE_LABEL
from trainprof.analysis.run.step_split import PHASE_LABEL
from trainprof.recordtypes.diff import Changes, Diff, Pair
from trainprof.report.analysis_terminal import _short
from trainprof.report.console import escape
from trainprof.report.diff_text import (change, gain, has_gpu, ops_title, run_lines, side_name, side_text,
                                        trace_step_line, verdict_line)
from trainprof.report.formatting import duration, signed_us
from trainprof.report.fit import FitTable
from trainprof.report.text import visible_tree


def _delta_table(block: Changes, title: str) -> FitTable:
    t = FitTable(title=title, title_justify="left")
    t.add_column("name (per step)", no_wrap=True)
    t.add_column("base", justify="right", no_wrap=True)
    t.add_column("new", justify="right", no_wrap=True)
    t.add_column("Δ", justify="right", no_wrap=True)
    t.add_column("change", justify="right", no_wrap=True)
    for r in block.top:
        t.add_row(_short(r.name, 30), duration(r.base_us_per_step, "us"), duration(r.new_us_per_step, "us"),
                  signed_us(r.delta_us_per_step), change(r))
    return t


def _parts_table(parts: dict[str, Pair], title: str, labels: dict | None = None) -> FitTable:
    t = FitTable(title=title, title_justify="left")
    for c in ("", "base", "new", "Δ"):
        t.add_column(c, justify="right")
    for p, v in parts.items():
        t.add_row((labels or {}).get(p, p), duration(v.base_us_per_step, "us"), duration(v.new_us_per_step, "us"),
                  signed_us(v.delta_us_per_step))
    return t


def _findings_table(d: Diff) -> FitTable:
    t = FitTable(title="Findings", title_justify="left")
    for c in ("finding", "base", "new", ""):
        t.add_column(c, justify="left" if c in ("finding", "") else "right")
    for f in d.findings:
        t.add_row(escape(f"{f.title} ({f.id})"), gain(f.base_gain_pct, f.base_projected_pct),
                  gain(f.new_gain_pct, f.new_projected_pct), "" if f.status == "unchanged" else f.status)
    return t


def print_diff(d: Diff, con: Console) -> None:
    """The verdict first, then the step split, idle causes, findings, operators (docs/trace-analysis.md)."""
    d = visible_tree(d)  # names come from the traces: ESC/BEL must not reach the terminal
    for label, side in (("base: ", d.base), ("new:  ", d.new)):
        if side is not None:
            con.print(f"{label}{escape(side_name(side))} ({escape(side_text(side))})")
    gpu = has_gpu(d)
    if d.verdict is not None:
        con.print(f"[bold]{escape(verdict_line(d.verdict))}[/]")
        con.print(f"  [dim]{escape(d.verdict.why)}[/]")
    for line in run_lines(d):
        con.print(f"  {escape(line)}")
    if (line := trace_step_line(d)) is not None:
        con.print(f"  {escape(line)}")
    for line in d.story:
        con.print(f"  • {escape(line)}")
    if d.runs is not None:
        con.print(_parts_table(d.runs.split, "Step split per step (mean of the measured steps, run.json)", PHASE_LABEL))
    if gpu and d.idle_causes:
        con.print(_parts_table(d.idle_causes, "Idle time per step, by cause", CAUSE_LABEL))
    if gpu:
        con.print(_parts_table(d.temporal_breakdown, "GPU time per step (mean of the per-step records)"))
    if d.findings:
        con.print(_findings_table(d))
    if d.base is not None and d.base.file and d.new is not None and d.new.file:
        con.print(_delta_table(d.ops, ops_title(d) + " (biggest change first)"))
    if gpu:
        con.print(_delta_table(d.kernels, "Kernels (biggest change first)"))
        k = d.kernels
        if k.n_added or k.n_removed:
            con.print(f"kernels added: {k.n_added}, removed: {k.n_removed}")


def diff_markdown(d: Diff, unlike_steps: str | None = None) -> str:
    """diff.md (report/templates/diff.md.j2). `unlike_steps`: why the two steps' times do not
    divide (they hold different work: a study whose knob changed the tokens per step); the
    step times are then shown without a ratio."""
    from trainprof.report.templating import render
    from trainprof.report.view_diff import diff_view

    d = visible_tree(d)  # names come from the traces: control characters shown, never sent
    return render("diff.md.j2", d=d, dv=diff_view(d), unlike_steps=unlike_steps, cause_label=CAUSE_LABEL,
                  phase_label=PHASE_LABEL, run_lines=run_lines(d),
                  trace_step_line=trace_step_line(d)).rstrip("\n") + "\n"
