"""Terminal tables for the critical path and the what-if projections (renderers only)."""

from __future__ import annotations

from rich.console import Console

from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.graph import CriticalPath, Projection, Scenario, WhatIf, WhatIfRecord
from trainprof.report.console import console, escape
from trainprof.report.names import short_names
from trainprof.report.text import visible_tree
from trainprof.report.fit import FitTable as Table

from trainprof.report.colours import OTHER_KIND, PATH_KIND_COLOUR
from trainprof.report.figures import key, show
from trainprof.report.formatting import duration



def _colour(kind: str) -> str:
    return PATH_KIND_COLOUR.get(kind.split(":")[0], OTHER_KIND)  # report.html's colours (report/colours.py)


def shares_line(share_pct: dict, n: int = 6, at: str | None = None) -> str:
    """`at`: the share_pct block's path (report/figures.py), when it is a record's."""
    return ", ".join(f"[{_colour(k)}]{escape(k)}[/] "
                     + (show(v, "pct_value", at + key(k)) if at else f"{v:.1f}%") for k, v in list(share_pct.items())[:n])


def print_critical_path(cp: CriticalPath, con: Console, top: int = 5, at: str = "analysis.ranks[0].critical_path",
                        whole_trace: bool = False) -> None:
    """`at`: the block's path in its record (report/figures.py); `whole_trace`: the trace has no
    steps, and its one path spans the whole trace."""
    cp = visible_tree(cp)  # op names from the trace: ESC/BEL must not reach the terminal
    steps = cp.steps
    if not steps:
        return
    title = ("Critical path of the whole trace (no steps) — what set its length" if whole_trace
             else "Critical path per step — what set the step time")
    t = Table(title=title, title_justify="left")
    t.add_column("trace" if whole_trace else "step", justify="right")
    t.add_column("length", justify="right")
    t.add_column("share of the path by kind")
    for i, s in enumerate(steps):
        f = f"{at}.steps[{i}]"
        t.add_row("—" if s.step < 0 else str(s.step), show(s.length_us, "us", f + ".length_us"),
                  shares_line(s.share_pct, at=f + ".share_pct"))
    con.print(t)
    if cp.trace.top_ops:
        ops = cp.trace.top_ops[:top]
        names = short_names([o.name for o in ops], 60)
        con.print("  on the path, whole trace: " + "; ".join(
            f"{escape(name)} ({o.kind}) {show(o.share_pct, 'pct_value', f'{at}.trace.top_ops[{i}].share_pct')}"
            for i, (o, name) in enumerate(zip(ops, names))))


def print_whatif_block(block: WhatIf | None, con: Console, at: str = "analysis.ranks[0].whatif",
                       whole_trace: bool = False) -> None:
    """The standard scenarios of analysis.json's `whatif` block, each with what it may claim:
    `bound` (the most it can give back: the time it removes per step, at most the step minus
    the busiest stream's work) and `floor` (that work: no projection goes below it).
    `whole_trace`: no steps, so the projection is of the whole trace's length."""
    if block:
        print_scenarios(block.scenarios, con, at, whole_trace)


def print_scenarios(scenarios: list[Scenario] | list[Projection], con: Console, at: str, whole_trace: bool) -> None:
    """The what-if table: analysis.json's standard scenarios, or `trainprof whatif`'s projection."""
    if not scenarios:
        return
    what = "length of the whole trace (no steps)" if whole_trace else "step time"
    t = Table(title=f"What-if — projected {what} (re-timed dependency graph)", title_justify="left")
    # the speed-up (measured ÷ projected) is in the JSON; the gain says the same in the
    # finding's unit and leaves room for the claims at 80 columns
    for c, j in (("edit", "left"), ("measured", "right"), ("projected", "right"), ("gain", "right"),
                 ("bound", "right"), ("floor", "right")):
        t.add_column(c, justify=j, no_wrap=c == "edit")
    for i, s in enumerate(scenarios):
        f = f"{at}.scenarios[{i}]"
        t.add_row(s.label, show(s.measured_step_us, "us", f + ".measured_step_us"),
                  show(s.projected_step_us, "us", f + ".projected_step_us"),
                  show(s.gain_pct, "pct_value", f + ".gain_pct"), show(or_default(s.bound_pct, None), "pct_value", f + ".bound_pct"),
                  show(or_default(s.floor_us, None), "us", f + ".floor_us"))
    con.print(t)
    for s in scenarios:
        for v in or_default(s.violations, []):  # a model bug on this trace, clamped to the bound
            con.print(f"  [yellow]check failed[/] ({escape(s.label)}): {escape(v)}; shown clamped to the bound")


def print_whatif(result: WhatIfRecord, con: Console | None = None) -> None:
    """`trainprof whatif` output."""
    result = visible_tree(result)
    con = con or console()
    whole = not result.steps_in_trace
    steps = "no steps (whole trace)" if whole else f"{result.steps_in_trace} steps"
    con.print(f"[bold]{escape(result.file)}[/] — {result.device_name or 'CPU'}, "
              f"rank {result.rank}, {steps}, "
              f"launch latency {result.launch_latency_us:.1f} µs")
    for note in result.notes:
        con.print(f"  [yellow]note:[/] {escape(note)}")
    print_scenarios(result.scenarios, con, "whatif.scenarios", whole)
    for s in result.scenarios:
        if len(result.scenarios) > 1 and s.gain_pct < 0.05:
            continue
        t = Table(title=f"{s.label}: " + ("whole trace" if whole else "per step"), title_justify="left")
        for c in ("step", "measured", "projected", "path before", "path after"):
            t.add_column(c, justify="left" if c.startswith("path") else "right")
        for r in s.steps:
            t.add_row("—" if r.step < 0 else str(r.step), duration(r.measured_us, "us"), duration(r.projected_us, "us"),
                      shares_line(r.critical_path_before.share_pct, 3),
                      shares_line(r.critical_path_after.share_pct, 3))
        con.print(t)
    con.print("[dim]" + ("no steps: the projection is of the whole trace" if whole else
                         "step time = mean period after the first step")
              + "; bound = time the edit removes per step, at most the step minus floor (the busiest stream's "
              "work per step); method: docs/critical-path.md[/]")
