"""The "system" block of run.json in the terminal: host, GPUs, energy (one small table)."""

from __future__ import annotations

from trainprof.report.console import escape
from rich.table import Table

from trainprof.report.fit import FitTable

from trainprof.recordtypes.run_parts import MemorySnapshot
from trainprof.recordtypes.system import GpuSummary, MeanMax, System
from trainprof.report.formatting import size


def _mm(st: MeanMax | None, unit: str) -> str:
    return "—" if not st else f"{st.mean:.0f}{unit} mean, {st.max:.0f}{unit} max"


def _joules(j: float | None) -> str:
    if j is None:
        return "—"
    return f"{j / 1e3:,.2f} kJ" if j >= 1e4 else f"{j:,.2f} J" if j >= 1 else f"{j * 1e3:,.2f} mJ"


def energy_lines(system: System) -> list[tuple[str, str]]:
    """("GPU"|"CPU", text): energy over the measured steps, per step and per token, or why
    it is unavailable (shared by the terminal, report.html and report.md)."""
    e, rows = system.summary.energy, []
    for part, label in (("gpu", "GPU"), ("cpu", "CPU")):
        j = e.part(part, "j")
        if j is None:
            rows.append((label, f"unavailable: {e.part(part, 'unavailable') or '—'}"))
            continue
        per_tok = e.part(part, "j_per_token")
        note = e.part(part, "note")
        rows.append((label, f"{_joules(j)} over {e.steps} measured steps: "
                     f"{_joules(e.part(part, 'j_per_step'))}/step, "
                     + (f"{per_tok * 1e3:,.3f} mJ/token" if per_tok is not None else "—/token")
                     + f" ({e.part(part, 'source')})"
                     + (f"; {note}" if note else "")))
    return rows


def _gpu(g: GpuSummary) -> str:
    parts = []
    if g.util_pct_mean is not None:
        parts.append(f"util {g.util_pct_mean:.0f}% mean" + (" (whole run)" if g.scope == "whole run" else ""))
    if g.sm_clock_mhz_mean is not None:
        parts.append(f"SM {g.sm_clock_mhz_mean:,.0f} MHz")
    if g.mem_used_bytes_max is not None:
        parts.append(f"mem {size(g.mem_used_bytes_max)}")
    if g.power_w_mean is not None:
        parts.append(f"{g.power_w_mean:.0f} W mean, {g.power_w_max:.0f} max")
    if g.temp_c_max is not None:
        parts.append(f"{g.temp_c_max:.0f} °C max")
    return ", ".join(parts) or "—"


def system_table(system: System) -> Table:
    s = system.summary
    t = FitTable(title=f"System ({s.n_samples} samples every {system.interval_s:g} s over "
              f"{s.duration_s:.1f} s)", title_justify="left", show_header=False)
    t.add_column("metric", style="bold")
    t.add_column("value")
    t.add_row("CPU utilisation", _mm(s.cpu_util_pct, "%") + " (all cores)")
    if s.others_cpu_pct or s.load_avg_1m:
        parts = [f"other processes {_mm(s.others_cpu_pct, '%')}"] if s.others_cpu_pct else []
        if s.steal_pct and s.steal_pct.max:
            parts.append(f"steal {_mm(s.steal_pct, '%')}")
        if s.load_avg_1m:
            la = s.load_avg_1m
            parts.append(f"1-min load average {la.mean:.1f} mean, {la.max:.1f} max")
        t.add_row("contention", ", ".join(parts))
    rss = f"{size(s.rss_bytes_max)} peak"
    if s.children_rss_bytes_max:
        rss += f", workers {size(s.children_rss_bytes_max)}"
    t.add_row("process RSS", rss)
    io = [f"{label} {size(v) if v else '0 B'}" for label, v in
          (("disk read", s.disk_read_bytes), ("write", s.disk_write_bytes),
           ("net rx", s.net_rx_bytes), ("tx", s.net_tx_bytes)) if v is not None]
    if io:
        t.add_row("IO (machine)", ", ".join(io))
    for g in s.gpus:
        t.add_row(f"GPU {g.index}", _gpu(g))
    for label, text in energy_lines(system):
        t.add_row(f"{label} energy", escape(text))
    for name, why in system.errors.items():
        t.add_row(f"{name} sensor", escape(f"stopped: {why}"))
    return t


def memory_snapshot_table(snap: MemorySnapshot) -> Table:
    """run --memory-snapshot: bytes by category at the peak, and the allocator's fragmentation."""
    t = FitTable(title="Memory snapshot (categories at the peak of the recorded steps)", title_justify="left")
    t.add_column("category")
    t.add_column("at peak", justify="right")
    t.add_column("max", justify="right")
    cats = snap.categories
    if cats.unavailable is not None:
        t.add_row(escape(cats.unavailable), "—", "—")
    else:
        most = cats.max or {}
        for name, b in sorted((cats.at_peak or {}).items(), key=lambda kv: -kv[1]):
            if b or most[name]:
                t.add_row(name.replace("_", " "), size(b), size(most[name]))
        t.add_row("[bold]total[/]", f"[bold]{size(cats.peak_bytes)}[/]", "")
    f = snap.fragmentation
    if f.reserved_bytes:
        t.caption = (f"allocator: {size(f.reserved_bytes)} reserved, {size(f.allocated_bytes)} allocated, "
                     f"{100 * f.fragmentation:.1f}% cached free ({100 * f.external_fragmentation:.0f}% of it "
                     f"outside the largest free block)" + (f"; {snap.file} opens in pytorch.org/memory_viz"
                                                           if snap.file else ""))
    return t
