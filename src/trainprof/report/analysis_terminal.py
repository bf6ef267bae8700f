"""Terminal rendering of analysis.json: per rank, the GPU breakdown, idle causes, top-K."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from trainprof.report.text import visible_tree
from rich.table import Table

from trainprof.report.fit import FitTable

from trainprof.report.units import clip, ms, shapes


def _us(x: float | None) -> str:
    # µs below 1 ms (negative deltas too), else units.ms (which turns to s at 10 s)
    if x is None:
        return "—"
    return f"{x:,.1f} µs" if abs(x) < 1000 else ms(x / 1e6)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f}%"


def _short(name: str, width: int = 38) -> str:
    """Display form of a kernel/op name (the JSON keeps the full one)."""
    for noise in ("void ", "(anonymous namespace)::", "at::native::"):
        name = name.replace(noise, "")
    return escape(clip(name, width))


def breakdown_table(rank: dict) -> Table:
    tb = rank["temporal_breakdown"]
    t = FitTable(title=f"GPU time (span {_us(tb['span_us'])}, first to last GPU activity)", title_justify="left")
    parts = ["compute", "communication", "memcpy", "memset"] + (["sync"] if tb.get("sync_us") else []) + ["idle"]
    t.add_column("")
    for c in parts:
        t.add_column(c, justify="right")
    t.add_row("time", *(_us(tb[f"{p}_us"]) for p in parts))
    t.add_row("share", *(_pct(tb[f"{p}_pct"]) for p in parts))
    return t


def idle_table(rank: dict) -> Table:
    ib = rank["idle_breakdown"]
    t = FitTable(title=f"Why the GPU was idle ({ib['gaps']} gaps, {_us(ib['idle_us'])})", title_justify="left")
    t.add_column("cause")
    t.add_column("time", justify="right")
    t.add_column("share of idle", justify="right")
    for c in ("data_loading", "host_sync", "host_launch", "other", "unattributed"):
        if ib.get(f"{c}_us", 0) > 0:
            t.add_row(c.replace("_", " "), _us(ib[f"{c}_us"]), _pct(ib.get(f"{c}_pct")))
    return t


def top_table(rows: list[dict], title: str, name_key: str = "name") -> Table:
    t = FitTable(title=title, title_justify="left")
    t.add_column("name", no_wrap=True, overflow="ellipsis")
    t.add_column("count", justify="right")
    t.add_column("total", justify="right")
    t.add_column("mean", justify="right")
    t.add_column("share", justify="right")
    for r in rows:
        t.add_row(_short(r[name_key]), str(r.get("calls", r.get("count"))), _us(r["total_us"]),
                  _us(r["mean_us"]), _pct(r["share_pct"]))
    return t


def print_analysis(result: dict, con: Console) -> None:
    result = visible_tree(result)  # names come from the trace: ESC/BEL must not reach the terminal
    for rank in result["ranks"]:
        head = f"[bold]rank {rank['rank']}[/] {escape(rank['file'])}"
        dev = rank["device_name"] or "no GPU activity (CPU-only trace)"
        con.print(f"{head}\n  device: {escape(dev)}; {rank['events']:,} events; "
                  f"{rank['steps']} profiler steps"
                  + (f"; median step {_us(rank['step_time_us'])}" if rank["step_time_us"] else ""))
        if rank["skipped_events"]:
            con.print(f"  [yellow]warning:[/] {rank['skipped_events']} malformed events skipped")
        for note in rank.get("notes", []):
            con.print(f"  [yellow]note:[/] {escape(note)}")
        if rank["has_gpu"]:
            con.print(breakdown_table(rank))
            con.print(idle_table(rank))
            sites = rank["idle_breakdown"].get("call_sites") or []
            for s in sites[:3]:
                where = " ← ".join(x for x in (s["op"], s["python"]) if x) or "?"
                con.print(f"  host sync: {escape(s['call'])} in {escape(where)}: {s['gaps']} gaps, {_us(s['idle_us'])} idle")
            comm = rank["communication"]
            if comm["kernels"]:
                con.print(f"  communication: {_us(comm['union_us'])}, {_pct(comm['overlap_pct'])} overlapped "
                          f"with compute, {_us(comm['exposed_us'])} exposed")
            ls = rank["launch_stats"]
            con.print(f"  launches: {ls['kernels']:,} kernels ({ls['kernels_per_step']:,.0f}/step), "
                      f"{ls['short_kernel_count_pct']:.0f}% shorter than {ls['short_kernel_threshold_us']:g} µs; "
                      f"Tensor Core share of compute {_pct(rank['tensor_core_pct'])}")
        metric = rank["top_ops"][0]["metric"] if rank["top_ops"] else "gpu"
        con.print(top_table(rank["top_ops"], "Top operators by " + ("GPU time" if metric == "gpu" else "self CPU time")))
        if rank["top_kernels"]:
            con.print(top_table(rank["top_kernels"], "Top kernels"))
        if rank.get("roofline_points"):
            con.print(roofline_table(rank))
        if rank.get("critical_path"):
            from trainprof.report.whatif_terminal import print_critical_path, print_whatif_block

            print_critical_path(rank["critical_path"], con)
            print_whatif_block(rank.get("whatif"), con)
        if "findings" in rank:
            from trainprof.report.findings_terminal import print_findings

            print_findings(rank["findings"], con, rank.get("bottleneck"), title=f"Findings, rank {rank['rank']}")
    ncu = result.get("ncu")
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
    mr = result.get("multi_rank")
    if mr:
        t = FitTable(title=f"Ranks ({mr['ranks']}), per step", title_justify="left")
        for c in ("rank", "step", "compute", "communication", "idle", "waiting"):
            t.add_column(c, justify="right")
        for r in mr["per_rank"]:
            t.add_row(str(r["rank"]), _us(r["step_time_us"]), _us(r["compute_us"]), _us(r["communication_us"]),
                      _us(r["idle_us"]), _us(r["wait_us"]))
        con.print(t)
        if mr.get("collectives"):
            from trainprof.report.collectives_terminal import print_collectives

            print_collectives(visible_tree(mr["collectives"]), con)
        if mr.get("findings"):
            from trainprof.report.findings_terminal import print_findings

            print_findings(mr["findings"], con, None, title="Job findings")


def _dims(d) -> str:  # noqa: ANN001
    return escape(shapes(d, times="x", sep=",", tensor_lists=False, gaps=True))


def roofline_table(rank: dict, k: int | None = None) -> Table:
    rank = visible_tree(rank)
    rf = rank["roofline"]
    roof = (f"{rf['peak_tflops']:g} TFLOP/s {rf['dtype']}, {rf['peak_bandwidth_gbs']:g} GB/s, "
            f"ridge {rf['ridge_flop_per_byte']:.1f} FLOP/B; {rf['source']}") if rf.get("ridge_flop_per_byte") \
        else f"roofs unknown: {rf['hint']}" if rf.get("hint") \
        else f"roofs unknown ({rf['source']}): pass --peak-tflops and --peak-bandwidth-gbs"
    t = FitTable(title=f"Roofline of the top operators ({roof})", title_justify="left")
    widths = {"time": 8, "FLOP/B": 6, "TF/s": 6, "roof%": 5, "bound": 7}
    for c in ("op", "shapes", "time", "FLOP/B", "TF/s", "roof%", "bound"):
        t.add_column(c, justify="left" if c in ("op", "shapes", "bound") else "right", no_wrap=True,
                     overflow="ellipsis", min_width=widths.get(c))
    notes = []
    for p in rank["roofline_points"][:k]:
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
