"""Terminal rendering of analysis.json: per rank, the GPU breakdown, idle causes, top-K.

Reads the typed record (recordtypes.analysis.Analysis; a dict is converted on the way in);
the blocks that record keeps untyped (critical_path, whatif, a rank's collectives,
roofline_points, ncu) are read as the dicts they are."""

from __future__ import annotations

from typing import Any

import msgspec
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from trainprof.recordtypes.analysis import Analysis, Rank
from trainprof.recordtypes.base import as_struct, known, or_default
from trainprof.report.fit import FitTable
from trainprof.report.text import visible_tree
from trainprof.report.units import clip, ms, shapes, steps_phrase


def _us(x: float | None) -> str:
    # µs below 1 ms (negative deltas too), else units.ms (which turns to s at 10 s)
    if not known(x):
        return "—"
    return f"{x:,.1f} µs" if abs(x) < 1000 else ms(x / 1e6)


def _pct(x: float | None) -> str:
    return "—" if not known(x) else f"{x:.1f}%"


def _short(name: str, width: int = 38) -> str:
    """Display form of a kernel/op name (the JSON keeps the full one)."""
    for noise in ("void ", "(anonymous namespace)::", "at::native::"):
        name = name.replace(noise, "")
    return escape(clip(name, width))


def breakdown_table(rank: Rank) -> Table:
    tb = rank.temporal_breakdown
    t = FitTable(title=f"GPU time (span {_us(tb.span_us)}, first to last GPU activity)", title_justify="left")
    parts = ["compute", "communication", "memcpy", "memset"] + (["sync"] if tb.sync_us else []) + ["idle"]
    t.add_column("")
    for c in parts:
        t.add_column(c, justify="right")
    t.add_row("time", *(_us(getattr(tb, f"{p}_us")) for p in parts))
    t.add_row("share", *(_pct(getattr(tb, f"{p}_pct")) for p in parts))
    return t


def idle_table(rank: Rank) -> Table:
    ib = rank.idle_breakdown
    t = FitTable(title=f"Why the GPU was idle ({ib.gaps} gaps, {_us(ib.idle_us)})", title_justify="left")
    t.add_column("cause")
    t.add_column("time", justify="right")
    t.add_column("share of idle", justify="right")
    for c in ("data_loading", "host_sync", "host_launch", "other", "unattributed"):
        if getattr(ib, f"{c}_us") > 0:
            t.add_row(c.replace("_", " "), _us(getattr(ib, f"{c}_us")), _pct(getattr(ib, f"{c}_pct")))
    return t


def top_table(rows: list[Any], title: str) -> Table:
    """Top operators (OpRow: `calls`) or kernels (KernelRow: `count`)."""
    t = FitTable(title=title, title_justify="left")
    t.add_column("name", no_wrap=True, overflow="ellipsis")
    t.add_column("count", justify="right")
    t.add_column("total", justify="right")
    t.add_column("mean", justify="right")
    t.add_column("share", justify="right")
    for r in rows:
        count = r.calls if hasattr(r, "calls") else r.count
        t.add_row(_short(r.name), str(or_default(count, None)), _us(r.total_us), _us(r.mean_us), _pct(r.share_pct))
    return t


def print_analysis(result: dict | Analysis, con: Console) -> None:
    result = visible_tree(as_struct(result, Analysis))  # names come from the trace: ESC/BEL must not reach the terminal
    for rank in result.ranks:
        head = f"[bold]rank {rank.rank}[/] {escape(rank.file)}"
        dev = rank.device_name or "no GPU activity (CPU-only trace)"
        steps = or_default(rank.steps, 0)
        con.print(f"{head}\n  device: {escape(dev)}; {or_default(rank.events, 0):,} events; "
                  f"{escape(steps_phrase(steps, rank.steps_from))}"
                  + (f"; median step {_us(rank.step_time_us)}" if steps and rank.step_time_us else ""))
        if rank.skipped_events:
            con.print(f"  [yellow]warning:[/] {rank.skipped_events} malformed events skipped")
        for note in rank.notes or []:
            con.print(f"  [yellow]note:[/] {escape(note)}")
        if rank.has_gpu:
            con.print(breakdown_table(rank))
            con.print(idle_table(rank))
            for s in rank.idle_breakdown.call_sites[:3]:
                where = " ← ".join(x for x in (s.op, s.python) if x) or "?"
                con.print(f"  host sync: {escape(s.call)} in {escape(where)}: {s.gaps} gaps, {_us(s.idle_us)} idle")
            comm = rank.communication
            if comm and comm.kernels:
                con.print(f"  communication: {_us(comm.union_us)}, {_pct(comm.overlap_pct)} overlapped "
                          f"with compute, {_us(comm.exposed_us)} exposed")
            ls = rank.launch_stats
            if ls:
                per = f" ({or_default(ls.kernels_per_step, 0):,.0f}/step)" if steps else ""
                con.print(f"  launches: {or_default(ls.kernels, 0):,} kernels{per}, "
                          f"{or_default(ls.short_kernel_count_pct, 0):.0f}% shorter than "
                          f"{or_default(ls.short_kernel_threshold_us, 0):g} µs; "
                          f"Tensor Core share of compute {_pct(rank.tensor_core_pct)}")
        metric = rank.top_ops[0].metric if rank.top_ops else "gpu"
        con.print(top_table(rank.top_ops, "Top operators by " + ("GPU time" if metric == "gpu" else "self CPU time")))
        if rank.top_kernels:
            con.print(top_table(rank.top_kernels, "Top kernels"))
        if rank.roofline_points:
            con.print(roofline_table(rank))
        if rank.critical_path:
            from trainprof.report.whatif_terminal import print_critical_path, print_whatif_block

            print_critical_path(rank.critical_path, con, whole_trace=not steps)
            print_whatif_block(rank.whatif or None, con, whole_trace=not steps)
        if known(rank.findings):
            from trainprof.report.findings_terminal import print_findings

            print_findings(msgspec.to_builtins(rank.findings), con, rank.bottleneck or None,
                           title=f"Findings, rank {rank.rank}", whole_trace=not steps)
    ncu = result.ncu or None
    if ncu:
        t = FitTable(title=f"Nsight Compute ({escape(ncu['file'])}: {ncu['kernels']} launches, measured FLOPs and DRAM bytes)",
                  title_justify="left")
        widths = {"n": 3, "time": 8, "FLOP/B": 6, "TF/s": 6, "GB/s": 5, "roof%": 5, "bound": 7}
        for c in ("kernel", "n", "time", "FLOP/B", "TF/s", "GB/s", "roof%", "bound"):
            t.add_column(c, justify="left" if c in ("kernel", "bound") else "right", no_wrap=True,
                         min_width=widths.get(c))
        for p in ncu["points"]:
            t.add_row(_short(p["name"], 22), str(p["count"]), _us(p["device_time_us"]),
                      "—" if p["intensity"] is None else f"{p['intensity']:.3g}", f"{p['achieved_tflops']:.3g}",
                      f"{p['achieved_gbs']:.0f}", "—" if p["roofline_pct"] is None else f"{p['roofline_pct']:.0f}%",
                      p["bound"] or "—")
        con.print(t)
    mr = result.multi_rank
    if mr:
        stepped = any(or_default(r.steps, 0) for r in result.ranks)  # else each row is a whole trace
        t = FitTable(title=f"Ranks ({mr.ranks}), " + ("per step" if stepped else "whole traces (no steps)"),
                     title_justify="left")
        for c in ("rank", "step", "compute", "communication", "idle", "waiting"):
            t.add_column(c, justify="right")
        for r in mr.per_rank or []:
            t.add_row(str(r.rank), _us(r.step_time_us), _us(r.compute_us), _us(r.communication_us),
                      _us(r.idle_us), _us(r.wait_us))
        con.print(t)
        if mr.collectives:
            from trainprof.report.collectives_terminal import print_collectives

            print_collectives(mr.collectives, con)
        if mr.findings:
            from trainprof.report.findings_terminal import print_findings

            print_findings(msgspec.to_builtins(mr.findings), con, None, title="Job findings")


def _dims(d) -> str:  # noqa: ANN001
    return escape(shapes(d, times="x", sep=",", tensor_lists=False, gaps=True))


def roofline_table(rank: dict | Rank, k: int | None = None) -> Table:
    rank = visible_tree(as_struct(rank, Rank))
    rf = rank.roofline
    roof = (f"{rf.peak_tflops:g} TFLOP/s {rf.dtype}, {rf.peak_bandwidth_gbs:g} GB/s, "
            f"ridge {rf.ridge_flop_per_byte:.1f} FLOP/B; {rf.source}") if rf.ridge_flop_per_byte \
        else f"roofs unknown: {rf.hint}" if rf.hint \
        else f"roofs unknown ({or_default(rf.source, 'unknown')}): pass --peak-tflops and --peak-bandwidth-gbs"
    t = FitTable(title=f"Roofline of the top operators ({roof})", title_justify="left")
    widths = {"time": 8, "FLOP/B": 6, "TF/s": 6, "roof%": 5, "bound": 7}
    for c in ("op", "shapes", "time", "FLOP/B", "TF/s", "roof%", "bound"):
        t.add_column(c, justify="left" if c in ("op", "shapes", "bound") else "right", no_wrap=True,
                     overflow="ellipsis", min_width=widths.get(c))
    notes = []
    for p in rank.roofline_points[:k]:
        pct = p["roofline_pct"]
        mark = ""
        if p.get("note"):  # an estimate or a point above its roof says why
            notes.append(f"* {p['name'].replace('aten::', '')}: {p['note']}")
            mark = "*"
        t.add_row(_short(p["name"].replace("aten::", ""), 16), _dims(p["input_dims"]),
                  _us(p["device_time_us"]), f"{p['intensity']:.3g}", f"{p['achieved_tflops']:.3g}",
                  ("—" if pct is None else f"{pct:.0f}%") + mark, p["bound"] or "—")
    if notes:
        t.caption = escape("\n".join(dict.fromkeys(notes)))
        t.caption_justify = "left"
    return t
