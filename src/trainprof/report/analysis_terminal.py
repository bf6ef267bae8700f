"""Terminal rendering of analysis.json: per rank, the GPU breakdown, idle causes, top-K.

Reads the typed record (recordtypes.analysis.Analysis; a dict is converted on the way in);
every block typed, the Nsight Compute one (`ncu`) included."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from trainprof.recordtypes.analysis import Analysis, Rank
from trainprof.recordtypes.roofline import NcuBlock
from trainprof.recordtypes.base import as_struct, known, or_default
from trainprof.report.console import escape
from trainprof.report.device_text import device_label
from trainprof.report.figures import LABELS, hta_idle_note, show, steps_shown, temporal_note
from trainprof.report.fit import FitTable
from trainprof.report.names import short_name, short_names
from trainprof.report.text import visible_tree
from trainprof.report.top_roofline import bounds_sentence, top_rows
from trainprof.report.formatting import shapes
from trainprof.vocab.idle import CAUSES
from trainprof.vocab.parts import PARTS, SYNC

NAME_WIDTH = 38  # the name column of an 80-column terminal's top-K tables


def _short(name: str, width: int = NAME_WIDTH) -> str:
    """Display form of one kernel/op name (report/names.py; the JSON keeps the full one)."""
    return escape(short_name(name, width))


def breakdown_table(rank: Rank, at: str = "analysis.ranks[0]") -> Table:
    tb = rank.temporal_breakdown
    at += ".temporal_breakdown"
    t = FitTable(title=f"{LABELS['temporal']} (span {show(tb.span_us, 'us', at + '.span_us')}, first to last GPU "
                       "activity)", title_justify="left")
    parts = [p for p in PARTS if p != SYNC or tb.sync_us]
    t.add_column("")
    for c in parts:
        t.add_column(LABELS.get(f"temporal.{c}", c), justify="right")
    t.add_row("time", *(show(getattr(tb, f"{p}_us"), "us", f"{at}.{p}_us") for p in parts))
    t.add_row("share", *(show(getattr(tb, f"{p}_pct"), "pct_value", f"{at}.{p}_pct") for p in parts))
    hta = hta_idle_note(tb, at)
    t.caption = temporal_note(rank.steps) + "." + (f" {hta}." if hta else "")
    t.caption_justify = "left"
    return t


def idle_table(rank: Rank, at: str = "analysis.ranks[0]") -> Table:
    ib = rank.idle_breakdown
    at += ".idle_breakdown"
    t = FitTable(title_justify="left")  # the heading is a line of its own (idle_heading): a title wraps at the table's width
    t.add_column("cause")
    t.add_column("time", justify="right")
    t.add_column("share of idle", justify="right")
    for c in CAUSES:
        if or_default(getattr(ib, f"{c}_us"), 0.0) > 0:
            t.add_row(c.replace("_", " "), show(getattr(ib, f"{c}_us"), "us", f"{at}.{c}_us"),
                      show(getattr(ib, f"{c}_pct"), "pct_value", f"{at}.{c}_pct"))
    return t


def idle_heading(rank: Rank, at: str = "analysis.ranks[0]") -> str:
    ib = rank.idle_breakdown
    at += ".idle_breakdown"
    return (f"[italic]{LABELS['idle']}: {show(ib.idle_us, 'us', at + '.idle_us')} in "
            f"{show(ib.gaps, 'int', at + '.gaps')} gaps over a {show(ib.span_us, 'us', at + '.span_us')} span[/]")


def top_table(rows: list[Any], title: str, at: str = "analysis.ranks[0].top_ops") -> Table:
    """Top operators (OpRow: `calls`) or kernels (KernelRow: `count`); `at`: the list's path."""
    t = FitTable(title=title, title_justify="left")
    t.add_column("name", no_wrap=True, overflow="ellipsis")
    t.add_column("count", justify="right")
    t.add_column("total", justify="right")
    t.add_column("mean", justify="right")
    t.add_column("share", justify="right")
    names = short_names([r.name for r in rows], NAME_WIDTH)
    for i, (r, name) in enumerate(zip(rows, names)):
        count = ("calls", r.calls) if hasattr(r, "calls") else ("count", r.count)
        f = f"{at}[{i}]"
        t.add_row(escape(name), show(or_default(count[1], None), "int", f"{f}.{count[0]}"),
                  show(r.total_us, "us", f"{f}.total_us"), show(r.mean_us, "us", f"{f}.mean_us"),
                  show(r.share_pct, "pct_value", f"{f}.share_pct"))
    return t


def _header(rank: Rank, at: str, con: Console) -> None:
    head = f"[bold]rank {rank.rank}[/] {escape(rank.file)}"
    dev = device_label(rank)
    steps = or_default(rank.steps, 0)
    con.print(f"{head}\n  device: {escape(dev)}; {show(or_default(rank.events, None), 'int', at + '.events')} events; "
              f"{escape(steps_shown(steps, rank.steps_from, at + '.steps'))}"
              + (f"; median step {show(rank.step_time_us, 'us', at + '.step_time_us')}" if steps and rank.step_time_us
                 else ""))
    lead = or_default(rank.first_step_cpu_lead_us, None)
    if steps and lead:  # the host's run-ahead into the first step: apart, in no step (issue #39)
        con.print(f"  first step: the host entered it {show(lead, 'us', at + '.first_step_cpu_lead_us')} before its "
                  "first GPU work (in no step time, path or what-if)")
    if rank.skipped_events:
        con.print(f"  [yellow]warning:[/] {rank.skipped_events} malformed events skipped")
    for note in rank.notes or []:
        con.print(f"  [yellow]note:[/] {escape(note)}")


def _gpu_lines(rank: Rank, at: str, con: Console) -> None:
    """The GPU timeline's tables and one-line summaries (a GPU trace only)."""
    con.print(breakdown_table(rank, at))
    con.print(idle_heading(rank, at))
    con.print(idle_table(rank, at))
    for i, s in enumerate(rank.idle_breakdown.call_sites[:3]):
        f = f"{at}.idle_breakdown.call_sites[{i}]"
        where = " ← ".join(x for x in (s.op, s.python) if x)
        where = f"in {escape(where)}" if where else "(call site not recorded: profile with with_stack=True)"
        con.print(f"  host sync: {escape(s.call)} {where}: {show(s.gaps, 'int', f + '.gaps')} gaps, "
                  f"{show(s.idle_us, 'us', f + '.idle_us')} idle")
    comm = rank.communication
    if comm and comm.kernels:
        f = f"{at}.communication"
        con.print(f"  {LABELS['communication']}: {LABELS['communication.union']} "
                  f"{show(comm.union_us, 'us', f + '.union_us')}, {show(comm.overlap_pct, 'pct_value', f + '.overlap_pct')} "
                  f"{LABELS['communication.overlap']}, {show(comm.exposed_us, 'us', f + '.exposed_us')} "
                  f"{LABELS['communication.exposed']}")
    ls = rank.launch_stats
    if ls:
        f = f"{at}.launch_stats"
        # a trace without steps gets no per-step figure
        per = (f" ({show(or_default(ls.kernels_per_step, None), 'num0', f + '.kernels_per_step')}/step)"
               if or_default(rank.steps, 0) else "")
        con.print(f"  launches: {show(or_default(ls.kernels, None), 'int', f + '.kernels')} kernels{per}, "
                  f"{show(or_default(ls.short_kernel_count_pct, None), 'pct_value0', f + '.short_kernel_count_pct')} shorter "
                  f"than {or_default(ls.short_kernel_threshold_us, 0):g} µs; Tensor Core share of compute "
                  f"{show(rank.tensor_core_pct, 'pct_value', at + '.tensor_core_pct')}")


def print_analysis(result: dict | Analysis, con: Console, most: int | None = None, hint: str | None = None) -> None:
    """`most`: print full tables for at most this many ranks of a larger job (report/rank_detail.py;
    `hint`: how to see them all); None: every rank's."""
    from trainprof.report.rank_detail import ALL_HERE, detail_ranks, left_out_note

    result = visible_tree(as_struct(result, Analysis))  # names come from the trace: ESC/BEL must not reach the terminal
    shown = detail_ranks(result, most)
    for i, _ in shown:
        rank = result.ranks[i]
        steps = or_default(rank.steps, 0)
        at = f"analysis.ranks[{i}]"
        _header(rank, at, con)
        if rank.has_gpu:
            _gpu_lines(rank, at, con)
        metric = rank.top_ops[0].metric if rank.top_ops else "gpu"
        con.print(top_table(rank.top_ops, "Top operators by " + ("GPU time" if metric == "gpu" else "self CPU time"),
                            at + ".top_ops"))
        if rank.top_kernels:
            con.print(top_table(rank.top_kernels, "Top kernels", at + ".top_kernels"))
        if or_default(rank.modules, None) and rank.modules.rows:
            from trainprof.report.modules_terminal import module_note, module_table

            con.print(module_table(rank.modules, at + ".modules"))
            con.print(module_note(rank.modules, at + ".modules"))
        if or_default(rank.host_stacks, None):
            from trainprof.report.modules_terminal import host_stacks_line

            con.print(host_stacks_line(rank.host_stacks, at + ".host_stacks"))
        if has_roofline(rank):
            con.print(roofline_table(rank, at=at))
        if rank.critical_path:
            from trainprof.report.whatif_terminal import print_critical_path, print_whatif_block

            print_critical_path(rank.critical_path, con, at=at + ".critical_path", whole_trace=not steps)
            print_whatif_block(rank.whatif or None, con, at=at + ".whatif", whole_trace=not steps)
        if known(rank.findings):
            from trainprof.report.findings_terminal import print_findings

            print_findings(rank.findings, con, rank.bottleneck or None,
                           title=f"Findings, rank {rank.rank}", at=at + ".findings", whole_trace=not steps)
    note = left_out_note(result, shown, hint or ALL_HERE)
    if note:
        con.print(note)
    ncu = result.ncu or None
    if ncu:
        _ncu_table(ncu, con)
    mr = result.multi_rank
    if mr:
        # without steps on any rank, each row is a whole trace
        _multi_rank(mr, con, stepped=any(or_default(r.steps, 0) for r in result.ranks))


def _ncu_table(ncu: NcuBlock, con: Console) -> None:
    t = FitTable(title=f"Nsight Compute ({escape(ncu.file)}: {ncu.kernels} launches, measured FLOPs and DRAM bytes)",
                 title_justify="left")
    widths = {"n": 3, "time": 8, "FLOP/B": 6, "TF/s": 6, "GB/s": 5, "roof%": 5, "bound": 7}
    for c in ("kernel", "n", "time", "FLOP/B", "TF/s", "GB/s", "roof%", "bound"):
        t.add_column(c, justify="left" if c in ("kernel", "bound") else "right", no_wrap=True,
                     min_width=widths.get(c))
    names = short_names([p.name for p in ncu.points], 22)
    for i, (p, name) in enumerate(zip(ncu.points, names)):
        f = f"analysis.ncu.points[{i}]"
        t.add_row(escape(name), show(p.count, "int", f + ".count"), show(p.device_time_us, "us", f + ".device_time_us"),
                  show(p.intensity, "g3", f + ".intensity"), show(p.achieved_tflops, "g3", f + ".achieved_tflops"),
                  show(p.achieved_gbs, "num0", f + ".achieved_gbs"), show(p.roofline_pct, "pct_value0", f + ".roofline_pct"),
                  p.bound or "—")
    con.print(t)


def _multi_rank(mr: Any, con: Console, stepped: bool = True) -> None:
    host_only = mr.device_timeline is False  # a CPU job: no device timeline, only host steps
    t = FitTable(title=f"Ranks ({mr.ranks}), " + ("per step" if stepped else "whole traces (no steps)"),
                 title_justify="left")
    cols = ("rank", "host step") if host_only else ("rank", "step", "compute", "communication", "idle", "waiting")
    for c in cols:
        t.add_column(c, justify="right")
    for i, r in enumerate(mr.per_rank or []):
        f = f"analysis.multi_rank.per_rank[{i}]"
        cells = [str(r.rank), show(r.step_time_us, "us", f + ".step_time_us")]
        if not host_only:
            cells += [show(r.compute_us, "us", f + ".compute_us"), show(r.communication_us, "us", f + ".communication_us"),
                      show(r.idle_us, "us", f + ".idle_us"), show(r.wait_us, "us", f + ".wait_us")]
        t.add_row(*cells)
    con.print(t)
    if host_only:
        con.print(f"[dim]{LABELS['ranks.host_only']}.[/]")
    if mr.collectives:
        from trainprof.report.collectives_terminal import print_collectives

        print_collectives(mr.collectives, con)
        from trainprof.report.axes_terminal import print_axes, print_pipeline

        print_axes(mr.collectives, con)
        if or_default(mr.pipeline, None):
            print_pipeline(mr.pipeline, con)
    if mr.findings:
        from trainprof.report.findings_terminal import print_findings

        print_findings(mr.findings, con, None, title="Job findings",
                       at="analysis.multi_rank.findings")


def _dims(d) -> str:  # noqa: ANN001
    return escape(shapes(d, times="x", sep=",", tensor_lists=False, gaps=True))


def _roofs(rf: Any, h: str) -> str:
    """The roofs in a roofline table's title (the header's figures, tagged)."""
    if rf.ridge_flop_per_byte:
        return (f"{show(rf.peak_tflops, 'g3', h + '.peak_tflops')} TFLOP/s {rf.dtype}, "
                f"{show(rf.peak_bandwidth_gbs, 'g3', h + '.peak_bandwidth_gbs')} GB/s, "
                f"ridge {show(rf.ridge_flop_per_byte, 'g3', h + '.ridge_flop_per_byte')} FLOP/B; {rf.source}")
    if rf.hint:
        return "roofs unknown: see below"
    return f"roofs unknown ({or_default(rf.source, 'unknown')}): pass --peak-tflops and --peak-bandwidth-gbs"


def has_roofline(rank: Rank) -> bool:
    """Whether the rank has a roofline to print: its top-5 rows, or an older record's points."""
    return bool(top_rows(rank) or rank.roofline_points)


def roofline_table(rank: dict | Rank, k: int | None = None, at: str = "analysis.ranks[0]") -> Table:
    """The top-5 operators of the top-operators table on the roofline, with that table's times
    (`top_ops[i].roofline`, the rows report.md, report.html and roofline.png show); a record
    written before those blocks shows its by-shape points (`roofline_points`, `k` of them)."""
    rank = visible_tree(as_struct(rank, Rank))
    top = top_rows(rank)
    if not top:
        return _roofline_by_shape(rank, k, at)
    rf = rank.roofline
    t = FitTable(title=f"Roofline of the top-{len(top)} operators ({_roofs(rf, at + '.roofline')})",
                 title_justify="left")
    widths = {"time": 8, "FLOP/B": 6, "TF/s": 6, "roof%": 5, "bound": 7}
    for c in ("op", "time", "FLOP/B", "TF/s", "roof%", "bound"):
        t.add_column(c, justify="left" if c in ("op", "bound") else "right", no_wrap=True,
                     overflow="ellipsis", min_width=widths.get(c))
    notes = [("" if rf.ridge_flop_per_byte else "roofs unknown: ") + rf.hint] if rf.hint else []
    names = short_names([o.name.replace("aten::", "") for o, _ in top], 24)
    for i, ((o, q), name) in enumerate(zip(top, names)):
        f = f"{at}.top_ops[{i}]"
        g = f + ".roofline"
        mark = ""
        if q is not None and q.note:  # an estimate, a row above its roof or an unpriced row says why
            notes.append(f"* {o.name.replace('aten::', '')}: {q.note}")
            mark = "*"
        if q is None or q.flops is None:
            t.add_row(escape(name), show(o.total_us, "us", f + ".total_us"), "—", "—", "—" + mark, "—")
            continue
        t.add_row(escape(name), show(o.total_us, "us", f + ".total_us"), show(q.intensity, "g3", g + ".intensity"),
                  show(q.achieved_tflops, "g3", g + ".achieved_tflops"),
                  show(q.roofline_pct, "pct_value0", g + ".roofline_pct") + mark, q.bound or "—")
    t.caption = escape("\n".join([bounds_sentence(top), *dict.fromkeys(notes)]))
    t.caption_justify = "left"
    return t


def _roofline_by_shape(rank: Rank, k: int | None, at: str) -> Table:
    rf = rank.roofline
    t = FitTable(title=f"Roofline of the top operators by shape, an older record ({_roofs(rf, at + '.roofline')})",
                 title_justify="left")
    widths = {"time": 8, "FLOP/B": 6, "TF/s": 6, "roof%": 5, "bound": 7}
    for c in ("op", "shapes", "time", "FLOP/B", "TF/s", "roof%", "bound"):
        t.add_column(c, justify="left" if c in ("op", "shapes", "bound") else "right", no_wrap=True,
                     overflow="ellipsis", min_width=widths.get(c))
    notes = [("" if rf.ridge_flop_per_byte else "roofs unknown: ") + rf.hint] if rf.hint else []
    pts = rank.roofline_points[:k]
    names = short_names([p.name.replace("aten::", "") for p in pts], 16)
    for i, (p, name) in enumerate(zip(pts, names)):
        f = f"{at}.roofline_points[{i}]"
        mark = ""
        if p.note:  # an estimate or a point above its roof says why
            notes.append(f"* {p.name.replace('aten::', '')}: {p.note}")
            mark = "*"
        t.add_row(escape(name), _dims(p.input_dims),
                  show(p.device_time_us, "us", f + ".device_time_us"), show(p.intensity, "g3", f + ".intensity"),
                  show(p.achieved_tflops, "g3", f + ".achieved_tflops"),
                  show(p.roofline_pct, "pct_value0", f + ".roofline_pct") + mark, p.bound or "—")
    if notes:
        t.caption = escape("\n".join(dict.fromkeys(notes)))
        t.caption_justify = "left"
    return t
