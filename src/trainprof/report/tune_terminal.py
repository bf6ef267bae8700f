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
    t = FitTable(title="Optimisation ladder (tokens/s from the median step, vs the baseline)", title_justify="left",
                 box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,  # blank edges: 2 columns saved
                 padding=(0, 1, 0, 0))  # the blank separator + 1: eight columns with whole figures fit 80
    # ×prev: over the best so far (the keep/reject test); ×base: cumulative, over the baseline
    widths = {"step": 10, "×prev": 5, "×base": 5, "MFU": 4, "mem": 8, "acc": 3, "kept": 4}
    for c in ("knob", "step", "×prev", "×base", "MFU", "mem", "acc", "kept"):
        t.add_column(c, justify="left" if c == "knob" else "right", no_wrap=True, min_width=widths.get(c))
    t.add_row("baseline", show(b.step_time_s, "s", "tune.baseline.step_time_s"), "", "1.00",
              show(b.mfu, "frac0", "tune.baseline.mfu"), show(b.peak_memory_bytes, "bytes", "tune.baseline.peak_memory_bytes"),
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
                  show(r.mfu, "frac0", f + ".mfu") if ran else "—",
                  show(r.peak_memory_bytes, "bytes", f + ".peak_memory_bytes"),
                  ("ok" if r.accuracy_ok else "[red]no[/]") if ran else "—",
                  "[green]yes[/]" if r.knob in kept else "no")
    con.print(t)
    for w in why:
        con.print(f"  {w}")
    tol = doc.tolerance
    if tol:
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
        con.print(f"[bold]best: {v.speedup_median:.2f}× the baseline's tokens/s[/] (median of {len(v.pairs)} "
                  f"alternating pairs, {v.speedup_min:.2f}–{v.speedup_max:.2f}×) with "
                  f"{', '.join(best.knobs) or 'no knob'}")
    else:
        con.print("[bold]best: the baseline[/] (no knob was both faster and accurate)")
    con.print(f"reproduce: {escape(best.command)}")


def write_chart(doc: Tune, out: Path) -> Path | None:
    """tune.png: report.html's ladder chart drawn to a file (report/plots.py); jobs/tune.py's
    entry point, kept here so that caller does not change."""
    from trainprof.report.plots import write_tune_chart

    return write_tune_chart(doc, out)
