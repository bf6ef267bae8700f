"""The "system" block of run.json in the terminal: host, GPUs, energy (one small table)."""

from __future__ import annotations

from typing import Any

from trainprof.report.console import escape
from rich.table import Table

from trainprof.report.fit import FitTable

from trainprof.report.formatting import size


def _mm(st: dict[str, float] | None, unit: str) -> str:
    return "—" if not st else f"{st['mean']:.0f}{unit} mean, {st['max']:.0f}{unit} max"


def _joules(j: float | None) -> str:
    if j is None:
        return "—"
    return f"{j / 1e3:,.2f} kJ" if j >= 1e4 else f"{j:,.2f} J" if j >= 1 else f"{j * 1e3:,.2f} mJ"


def energy_lines(system: dict[str, Any]) -> list[tuple[str, str]]:
    """("GPU"|"CPU", text): energy over the measured steps, per step and per token, or why
    it is unavailable (shared by the terminal, report.html and report.md)."""
    e, rows = system["summary"]["energy"], []
    for part, label in (("gpu", "GPU"), ("cpu", "CPU")):
        if f"{part}_j" not in e:
            rows.append((label, f"unavailable: {e.get(f'{part}_unavailable', '—')}"))
            continue
        per_tok = e.get(f"{part}_j_per_token")
        rows.append((label, f"{_joules(e[f'{part}_j'])} over {e['steps']} measured steps: "
                     f"{_joules(e.get(f'{part}_j_per_step'))}/step, "
                     + (f"{per_tok * 1e3:,.3f} mJ/token" if per_tok is not None else "—/token")
                     + f" ({e.get(f'{part}_source')})"
                     + (f"; {e[f'{part}_note']}" if e.get(f"{part}_note") else "")))
    return rows


def system_table(system: dict[str, Any]) -> Table:
    s = system["summary"]
    t = FitTable(title=f"System ({s['n_samples']} samples every {system['interval_s']:g} s over "
              f"{s['duration_s']:.1f} s)", title_justify="left", show_header=False)
    t.add_column("metric", style="bold")
    t.add_column("value")
    t.add_row("CPU utilisation", _mm(s.get("cpu_util_pct"), "%") + " (all cores)")
    if s.get("others_cpu_pct") or s.get("load_avg_1m"):
        parts = [f"other processes {_mm(s.get('others_cpu_pct'), '%')}"] if s.get("others_cpu_pct") else []
        if (s.get("steal_pct") or {}).get("max"):
            parts.append(f"steal {_mm(s['steal_pct'], '%')}")
        if s.get("load_avg_1m"):
            la = s["load_avg_1m"]
            parts.append(f"1-min load average {la['mean']:.1f} mean, {la['max']:.1f} max")
        t.add_row("contention", ", ".join(parts))
    rss = f"{size(s.get('rss_bytes_max'))} peak"
    if s.get("children_rss_bytes_max"):
        rss += f", workers {size(s['children_rss_bytes_max'])}"
    t.add_row("process RSS", rss)
    io = [f"{label} {size(s[k]) if s[k] else '0 B'}" for label, k in
          (("disk read", "disk_read_bytes"), ("write", "disk_write_bytes"),
           ("net rx", "net_rx_bytes"), ("tx", "net_tx_bytes")) if k in s]
    if io:
        t.add_row("IO (machine)", ", ".join(io))
    for g in s.get("gpus", []):
        parts = []
        if "util_pct_mean" in g:
            parts.append(f"util {g['util_pct_mean']:.0f}% mean" + (" (whole run)" if g.get("scope") == "whole run"
                                                                   else ""))
        if "sm_clock_mhz_mean" in g:
            parts.append(f"SM {g['sm_clock_mhz_mean']:,.0f} MHz")
        if "mem_used_bytes_max" in g:
            parts.append(f"mem {size(g['mem_used_bytes_max'])}")
        if "power_w_mean" in g:
            parts.append(f"{g['power_w_mean']:.0f} W mean, {g['power_w_max']:.0f} max")
        if "temp_c_max" in g:
            parts.append(f"{g['temp_c_max']:.0f} °C max")
        t.add_row(f"GPU {g['index']}", ", ".join(parts) or "—")
    for label, text in energy_lines(system):
        t.add_row(f"{label} energy", escape(text))
    for name, why in system.get("errors", {}).items():
        t.add_row(f"{name} sensor", escape(f"stopped: {why}"))
    return t


def memory_snapshot_table(snap: dict[str, Any]) -> Table:
    """run --memory-snapshot: bytes by category at the peak, and the allocator's fragmentation."""
    t = FitTable(title="Memory snapshot (categories at the peak of the recorded steps)", title_justify="left")
    t.add_column("category")
    t.add_column("at peak", justify="right")
    t.add_column("max", justify="right")
    cats = snap.get("categories", {})
    if "unavailable" in cats:
        t.add_row(escape(cats["unavailable"]), "—", "—")
    else:
        for name, b in sorted(cats["at_peak"].items(), key=lambda kv: -kv[1]):
            if b or cats["max"][name]:
                t.add_row(name.replace("_", " "), size(b), size(cats["max"][name]))
        t.add_row("[bold]total[/]", f"[bold]{size(cats['peak_bytes'])}[/]", "")
    f = snap.get("fragmentation", {})
    if f.get("reserved_bytes"):
        t.caption = (f"allocator: {size(f['reserved_bytes'])} reserved, {size(f['allocated_bytes'])} allocated, "
                     f"{100 * f['fragmentation']:.1f}% cached free ({100 * f['external_fragmentation']:.0f}% of it "
                     f"outside the largest free block)" + (f"; {snap['file']} opens in pytorch.org/memory_viz"
                                                           if snap.get("file") else ""))
    return t
