"""Findings as a ranked list: what to change first, why, and how."""

from __future__ import annotations

import msgspec
from rich.console import Console

from trainprof.recordtypes.finding import Finding
from trainprof.report.console import escape
from trainprof.report.figures import show
from trainprof.report.text import visible_tree

COLOUR = {"high": "bold red", "medium": "yellow", "low": "dim", "info": "dim cyan"}


def print_findings(findings: list[Finding], con: Console, bottleneck: str | None = None, title: str = "Findings",
                   at: str = "analysis.ranks[0].findings", whole_trace: bool = False) -> None:
    """`at`: the list's path in its record (report/figures.py); `whole_trace`: a trace without
    steps, whose gains are shares of the whole trace."""
    findings = visible_tree(msgspec.to_builtins(findings or []))  # evidence quotes op names from the trace
    of = "of the trace's time" if whole_trace else "of step time"
    head = f"[bold]{title}[/]" + (f" — principal bottleneck: [bold]{bottleneck}[/]" if bottleneck else "")
    con.print(head)
    if not findings:
        con.print("  no rule fired: nothing above the thresholds of docs/rules.md")
        return
    for i, f in enumerate(findings):
        c = COLOUR.get(f["severity"], "")
        p = f"{at}[{i}]"
        con.print(f" {i + 1}. [{c}]{f['severity']}[/] {escape(f['title'])} "
                  + (f"[dim]({f['id']}, up to {show(f['estimated_gain_pct'], 'pct_value', p + '.estimated_gain_pct')} {of}"
                     if f["estimated_gain_pct"]
                     else f"[dim]({f['id']}, a caveat: no speed-up claimed")
                  + (f", projected {show(f['projected_gain_pct'], 'pct_value', p + '.projected_gain_pct')}"
                     if f.get("projected_gain_pct") is not None else "")
                  + f", {f['confidence']} confidence)[/]")
        con.print(f"    evidence: {escape(f['evidence'])}")
        con.print(f"    fix: {escape(f['fix'])}")
