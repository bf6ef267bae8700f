"""The tuning ladder as a table (and tune.png, drawn by report/plots.py)."""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.console import Console

from trainprof.recordtypes.base import known
from trainprof.recordtypes.tune import Tune
from trainprof.report.console import escape
from trainprof.report.figures import show
from trainprof.report.fit import FitTable
from trainprof.report.text import visible_tree


def print_ladder(doc: Tune, con: Console) -> None:
    doc = visible_tree(doc)  # a --data path or a reason may hold control characters
    b = doc.baseline
    # no vertical rules: eight columns fit an 80-column terminal with the longest knob name
    unit = (doc.program.unit or "steps") if doc.program else "tokens"  # a program's batches count tokens or samples
    how = "the measured steps' total time" if doc.program else "the median step"  # jobs/tune_program.program_result
    t = FitTable(title=f"Optimisation ladder ({unit}/s over {how}, vs the baseline)", title_justify="left",
                 box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,  # blank edges: 2 columns saved
                 padding=(0, 1, 0, 0))  # the blank separator + 1: eight columns with whole figures fit 80
    # ×prev: over the best so far (the keep/reject test); ×base: cumulative, over the baseline
    widths = {"step": 10, "×prev": 5, "×base": 5, "MFU": 4, "mem": 8, "acc": 3, "kept": 4}
    for c in ("knob", "step", "×prev", "×base", "MFU", "mem", "acc", "kept"):
        t.add_column(c, justify="left" if c == "knob" else "right", no_wrap=True, min_width=widths.get(c))
    t.add_row("baseline", show(b.step_time_s, "s", "tune.baseline.step_time_s"), "", "1.00",
              show(b.mfu, "pct_of_fraction0", "tune.baseline.mfu"), show(b.peak_memory_bytes, "bytes", "tune.baseline.peak_memory_bytes"),
              "—", "")
    why = []
    kept = set(doc.best.knobs)  # kept: in the final configuration (passed its trial and the verify pairs)
    for i, r in enumerate(doc.trials):
        f = f"tune.trials[{i}]"
        if r.skipped:
            why.append(f"[dim]{r.knob}: {escape(r.reason or '')}[/]")
            continue
        if not r.accepted:
            why.append(f"{r.knob}: {escape(r.reason or '')}")
        elif r.knob not in kept:
            why.append(f"{r.knob}: passed its trial, not confirmed by the verify pairs")
        ran = r.ok is True
        t.add_row(r.knob, show(r.step_time_s, "s", f + ".step_time_s") if ran else "—",
                  show(r.step_gain or None, "num2", f + ".step_gain"),
                  show(r.speedup or None, "num2", f + ".speedup"),
                  show(r.mfu, "pct_of_fraction0", f + ".mfu") if ran else "—",
                  show(r.peak_memory_bytes, "bytes", f + ".peak_memory_bytes"),
                  ("ok" if r.accuracy_ok else "[red]no[/]") if ran else "—",
                  "[green]yes[/]" if r.knob in kept else "no")
    con.print(t)
    for w in why:
        con.print(f"  {w}")
    tol = doc.tolerance
    if doc.program:
        _program_guard(doc, kept, con)
    elif tol:
        devs = [r.loss_deviation for r in doc.trials if r.knob in kept and r.same_math and known(r.loss_deviation)]
        worst = f"; kept knobs moved it at most {max(devs):.3f}" if devs else ""
        con.print(f"accuracy guard: mean |Δloss| vs the baseline ≤ {tol.trajectory_tol:.3f} (seed-to-seed "
                  f"noise){worst}; validation loss ≤ baseline + {tol.val_tol:.3f}")
    best = doc.best
    v = best.verify
    u = best.unconfirmed
    if u:
        span = f" ({v.speedup_min:.2f}–{v.speedup_max:.2f}×)" if v and v.speedup_min is not None else ""
        con.print(f"[bold]best: the baseline[/]: {escape(u.reason)}{span}, so {', '.join(u.knobs)} not kept")
    elif v and v.speedup_median:
        con.print(f"[bold]best: {v.speedup_median:.2f}× the baseline's {unit}/s[/] (median of {len(v.pairs)} "
                  f"alternating pairs, {v.speedup_min:.2f}–{v.speedup_max:.2f}×) with "
                  f"{', '.join(best.knobs) or 'no knob'}")
    elif best.knobs:  # --verify-trials 0: the last kept knob's trial, unconfirmed by pairs
        con.print(f"[bold]best: {best.speedup:.2f}× the baseline's {unit}/s[/] in its trial (no verify pairs) with "
                  f"{', '.join(best.knobs)}")
    else:
        con.print("[bold]best: the baseline[/] (no knob was both faster and accurate)")
    con.print(f"reproduce: {escape(best.command)}")
    from trainprof.report.context import stop_line

    best_mfu = next((r.mfu for r in reversed(doc.trials) if r.knob in kept and known(r.mfu)), b.mfu)
    line = stop_line(best_mfu, measured_peak=(doc.baseline.config or {}).get("device") == "cpu")
    if line:
        con.print(escape(line))
    if doc.program:
        _apply(doc, con)


def _program_guard(doc: Tune, kept: set[str], con: Console) -> None:
    """A program's guard (tune/guard.ProgramGuard) and its compile times, under the table."""
    tol = doc.tolerance
    for r in doc.trials:
        compiled = known(r.config) and r.config.get("compile")  # the warm-up's excess is compilation there
        if compiled and known(r.compile_s) and r.compile_s:
            con.print(f"  {r.knob}: {r.compile_s:.1f} s more in the warm-up (compilation), not in the step time")
    if tol is None:
        return
    devs = [r.loss_deviation for r in doc.trials if r.knob in kept and r.same_math and known(r.loss_deviation)]
    worst = f"; kept knobs moved it at most {max(devs):.3g}" if devs else ""
    con.print(f"accuracy guard (your loss, per measured step): mean |Δloss| vs the baseline ≤ {tol.trajectory_tol:.3g} "
              f"({escape(tol.rule or '')}){worst}; a flag or variable of yours may change what is learned: its mean "
              f"loss ≤ the baseline's + {tol.changed_tol if known(tol.changed_tol) else 0:.3g}")


def _apply(doc: Tune, con: Console) -> None:
    """"Apply these to your code": each kept knob's patch (tune/patches.py)."""
    applied = doc.program.apply
    if not applied:
        con.print("nothing to apply to your code: no knob was kept")
        return
    con.print("[bold]apply these to your code[/] (each made permanent by the change below):")
    for a in applied:
        gain = f" ({a.speedup:.2f}× in its trial)" if a.speedup else ""
        con.print(f"  {escape(a.knob)}{gain}:")
        for line in a.patch:
            con.print(f"      {escape(line)}", soft_wrap=True)


def write_chart(doc: Tune, out: Path) -> Path | None:
    """tune.png: report.html's ladder chart drawn to a file (report/plots.py); jobs/tune.py's
    entry point, kept here so that caller does not change."""
    from trainprof.report.plots import write_tune_chart

    return write_tune_chart(doc, out)
