"""Terminal rendering of a trace diff."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from trainprof.report.text import visible_tree
from rich.table import Table

from trainprof.report.analysis_terminal import _short, _us


def _signed(x: float) -> str:
    return ("+" if x > 0 else "−" if x < 0 else "±") + _us(abs(x))


def _delta_table(block: dict, title: str) -> Table:
    t = Table(title=title, title_justify="left")
    t.add_column("name (per step)", no_wrap=True)
    t.add_column("base", justify="right", no_wrap=True)
    t.add_column("new", justify="right", no_wrap=True)
    t.add_column("Δ", justify="right", no_wrap=True)
    t.add_column("", justify="left", no_wrap=True)
    for r in block["top"]:
        t.add_row(_short(r["name"], 30), _us(r["base_us_per_step"]), _us(r["new_us_per_step"]),
                  _signed(r["delta_us_per_step"]), r["status"] if r["status"] != "changed" else "")
    return t


def print_diff(d: dict, con: Console) -> None:
    d = visible_tree(d)  # names come from the traces: ESC/BEL must not reach the terminal
    st = d["step_time_us"]
    con.print(f"base: {escape(d['base']['file'])} ({escape(d['base']['device_name'] or 'CPU')}, {d['base']['steps']} steps)")
    con.print(f"new:  {escape(d['new']['file'])} ({escape(d['new']['device_name'] or 'CPU')}, {d['new']['steps']} steps)")
    if st["speedup"]:
        con.print(f"[bold]step time {_us(st['base'])} → {_us(st['new'])}: {st['speedup']:.2f}× "
                  f"({st['change_pct']:+.1f}%)[/]")
    t = Table(title="GPU time per step", title_justify="left")
    for c in ("", "base", "new", "Δ"):
        t.add_column(c, justify="right")
    for p, v in d["temporal_breakdown"].items():
        t.add_row(p, _us(v["base_us_per_step"]), _us(v["new_us_per_step"]), _signed(v["delta_us_per_step"]))
    con.print(t)
    con.print(_delta_table(d["ops"], "Operators (biggest change first)"))
    con.print(_delta_table(d["kernels"], "Kernels (biggest change first)"))
    k = d["kernels"]
    if k["n_added"] or k["n_removed"]:
        con.print(f"kernels added: {k['n_added']}, removed: {k['n_removed']}")
