"""One rank's analysis record (the `ranks[i]` of analysis.json) from a parsed trace.

Only fields we chose reach the record: device name, rank, world size, counts and times.
Raw trace metadata (which can hold environment variables and tokens) never does.
"""

from __future__ import annotations

from typing import Callable

import msgspec
import numpy as np

from trainprof.analysis.graph.clock import corrected
from trainprof.analysis.job.collectives import rank_collectives
from trainprof.analysis.timeline.communication import communication
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.graph.critical_path import SEGMENT_BUDGET, critical_path
from trainprof.analysis.graph.depgraph import Graph, build_graph
from trainprof.analysis.timeline.host_work import attention_stats, memcpy_stats, optimizer_stats
from trainprof.analysis.timeline.idle import idle_breakdown, sync_spans
from trainprof.analysis.timeline.launch import launch_stats
from trainprof.analysis.cost.modules import module_times
from trainprof.analysis.timeline.ops import class_breakdown, top_kernels, top_ops
from trainprof.analysis.cost.roofline import Roof, dominant_dtype, roofline_header, roofline_points
from trainprof.analysis.cost.roofline_top import top_ops_roofline
from trainprof.analysis.timeline.step_windows import step_windows
from trainprof.analysis.timeline.temporal import per_step, temporal_breakdown
from trainprof.analysis.graph.whatif import row_scenarios, standard_whatifs
from trainprof.analysis.timeline.redundant_copies import redundant_copies
from trainprof.analysis.timeline.tiny_kernels import tiny_kernels
from trainprof.background import Background
from trainprof.forked import Forked, can_fork, spare_core
from trainprof.recordtypes.analysis import DeviceId, Rank
from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.graph import CriticalPath, WhatIf
from trainprof.recordtypes.collectives import RankCollectives
from trainprof.recordtypes.roofline import OpRoofline
from trainprof.recordtypes.timeline import IdleBreakdown, OpRow, RedundantCopies, TinyKernels
from trainprof.hardware.identity import DeviceIdentity
from trainprof.trace import Trace
from trainprof.trace.device import trace_identity


def analyze_trace(trace: Trace, *, file: str, top_k: int = 10, roof: Roof | None = None,
                  segment_budget: int = SEGMENT_BUDGET, overlap: bool = False,
                  device: DeviceIdentity | None = None) -> Rank:
    """The rank's record (its findings are added by jobs/analyze.py). `overlap`: the what-ifs
    in a forked child while this process computes the rest (forked.py; where no fork is safe or
    no core is spare, the graph work on a second thread); the same record either way.
    For a trace analysed alone (a pool of one process per core gains nothing from it); it
    pays on large traces, at the cost of both branches' temporaries alive at once (measured:
    docs/benchmarks.md, "2026-11-25 evening"). `device`: the trace's identity when the caller
    has it (it chose the roofs from it), else found here (trace/device.py)."""
    ctx, clock = corrected(Context.build(trace))  # a CPU–GPU clock offset is corrected first (clock.py)
    device = device or trace_identity(trace)
    if overlap and can_fork() and spare_core():
        # The graph built here, then the tiny kernels, redundant copies, what-ifs, collectives
        # and idle causes in a forked child (forked.py: it inherits the graph, copy-on-write);
        # here the other analyses and the critical path, about as long on the DDP trace (~0.1
        # s each), on two cores and without one GIL (docs/benchmarks.md, "2026-11-29 later").
        graph = build_graph(ctx)
        with Forked(_child_fields, ctx, graph, name="trainprof-whatifs", returns=tuple[
                TinyKernels, RedundantCopies, WhatIf | None, RankCollectives | None, IdleBreakdown]) as child:
            def late() -> dict:
                cp = critical_path(ctx, top_k, graph, segment_budget, clock=clock)
                return {**dict(zip(CHILD_FIELDS, child.result())), "critical_path": cp}

            return _rank(trace, ctx, device, file, top_k, roof, late)
    tiny, copies, named = _named(ctx)
    if overlap:  # no safe fork or no spare core: the graph work on a thread (numpy's loops overlap, the rest takes turns)
        job = Background(_graph_work, ctx, top_k, segment_budget, named, clock, name="trainprof-critical-path")
        return _rank(trace, ctx, device, file, top_k, roof, lambda: _late_here(ctx, tiny, copies, *job.result()))
    return _rank(trace, ctx, device, file, top_k, roof,
                 lambda: _late_here(ctx, tiny, copies, *_graph_work(ctx, top_k, segment_budget, named, clock)))


CHILD_FIELDS = ("tiny_kernels", "redundant_copies", "whatif", "collectives", "idle_breakdown")
"""the Rank fields a forked child computes (_child_fields), in its answer's order"""


def _named(ctx: Context) -> tuple[TinyKernels, RedundantCopies, dict]:
    """The tiny-kernel and redundant-copy blocks, and their rows by name for the what-ifs."""
    tiny, tiny_rows, tiny_ops = tiny_kernels(ctx)
    copies, copy_rows, copy_ops = redundant_copies(ctx)
    return tiny, copies, {"tiny_kernels": (tiny_rows, tiny_ops), "redundant_copies": (copy_rows, copy_ops)}


def _child_fields(ctx: Context, graph: Graph) -> tuple:
    """CHILD_FIELDS' values."""
    tiny, copies, named = _named(ctx)
    return tiny, copies, _whatifs(ctx, named, graph), rank_collectives(ctx), idle_breakdown(ctx)


def _late_here(ctx: Context, tiny: TinyKernels, copies: RedundantCopies, wi: WhatIf | None,
               cp: CriticalPath | None) -> dict:
    """The late fields computed in this process (no child)."""
    return {"tiny_kernels": tiny, "redundant_copies": copies, "whatif": wi, "collectives": rank_collectives(ctx),
            "idle_breakdown": idle_breakdown(ctx), "critical_path": cp}


def _rank(trace: Trace, ctx: Context, device: DeviceIdentity, file: str, top_k: int, roof: Roof | None,
          late: Callable[[], dict]) -> Rank:
    """The record: its other fields, then `late()`'s (CHILD_FIELDS and the critical path),
    computed beside these (a forked child, a thread) or after them."""
    roof = roof or Roof({}, None, "unknown", trace.device_name)
    points = roofline_points(ctx, roof, top_k=top_k)
    steps = per_step(ctx)
    classes = class_breakdown(ctx)
    comm = communication(ctx)
    tb = temporal_breakdown(ctx)
    # one definition of exposed communication: the block's is the breakdown's part (communication.py)
    assert abs(comm.exposed_us - tb.communication_us) <= 1e-6 * max(1.0, tb.span_us), (comm.exposed_us, tb.communication_us)
    ops = top_ops(ctx, top_k)
    ops = _with_roofline(ops, top_ops_roofline(ctx, roof, ops))  # one row, one time
    # no steps (neither ProfilerStep nor an iteration annotation): no per-step figure; the
    # one per_step row (step -1) is the whole trace, which rules read as the host span
    step_us = [] if ctx.steps.pseudo else [s.span_us for s in steps if or_default(s.span_us, None)]
    fields = dict(
        rank=trace.rank if trace.rank is not None else 0,
        file=file,
        device_name=trace.device_name,
        device=DeviceId(**device.record()),
        world_size=trace.world_size,
        events=int(len(trace)),
        skipped_events=int(trace.skipped_events),
        time_unit=trace.time_unit,
        has_gpu=ctx.has_gpu,
        steps=len(steps) if not ctx.steps.pseudo else 0,
        steps_from=ctx.steps.described or None,
        step_time_us=float(np.median(step_us)) if step_us else None,
        first_step_cpu_lead_us=_lead(ctx),
        per_step=steps,
        temporal_breakdown=tb,
        top_ops=ops,
        top_kernels=top_kernels(ctx, top_k),
        kernel_classes=classes.classes,
        communication=comm,
        launch_stats=launch_stats(ctx),
        memcpy=memcpy_stats(ctx),
        optimizer=optimizer_stats(ctx),
        attention=attention_stats(ctx),
        modules=module_times(ctx, roof),
        sync_spans=sync_spans(ctx),
        tensor_core_pct=classes.tensor_core_pct,
        matmul_us=classes.matmul_us,
        matmul_tensor_core_us=classes.matmul_tensor_core_us,
        roofline=roofline_header(roof, dominant_dtype(points)),
        roofline_points=points,
    )
    more = late()
    more["tiny_kernels"] = more["tiny_kernels"] if ctx.has_gpu else None
    return Rank(**fields, **more, notes=list(ctx.trace.notes))


def _lead(ctx: Context) -> float | None:
    """The CPU's run-ahead into the first step (step_windows.py): shown apart, in no step."""
    lead = step_windows(ctx).first_step_cpu_lead_us
    return round(lead, 3) if lead is not None else None


def _with_roofline(ops: list[OpRow], roofs: list[OpRoofline]) -> list[OpRow]:
    """The top operators, the first ones with their place on the roofline (roofline_top.py
    prices the first TOP_K rows; the rest keep no `roofline`)."""
    return [msgspec.structs.replace(row, roofline=roofs[i]) if i < len(roofs) else row for i, row in enumerate(ops)]


def _graph_work(ctx: Context, top_k: int, segment_budget: int, named: dict | None = None,
                clock=None) -> tuple[WhatIf | None, CriticalPath | None]:
    """The what-ifs and the critical path on one graph."""
    graph = build_graph(ctx)
    wi = _whatifs(ctx, named, graph)
    return wi, critical_path(ctx, top_k, graph, segment_budget, clock=clock)


def _whatifs(ctx: Context, named: dict | None, graph: Graph | None = None) -> WhatIf | None:
    """The what-ifs: the standard scenarios, then one per named set of rows (tiny kernels,
    redundant copies) where the trace has any (whatif.row_scenarios)."""
    graph = graph if graph is not None else build_graph(ctx)
    wi = standard_whatifs(ctx, graph)
    extra = row_scenarios(ctx, graph, named or {})
    if extra:
        wi = msgspec.structs.replace(wi, scenarios=[*wi.scenarios, *extra])
    return wi


def _steps_union(c) -> float:
    """|∪ communication| over every step's work (an older record's union_us was that)."""
    v = or_default(c.steps_union_us, None) if c else None
    return float(v if v is not None else (c.union_us if c else 0.0))


def rank_summary(rec: Rank) -> dict:
    """Per-step figures for the cross-rank comparison, each divided by the steps its window
    covers (analysis/job/diff.py): compute and idle are per-step means; communication is the
    union over every step's activity ÷ the steps that launched GPU work. (The whole-trace
    breakdown is HTA's window without the last step: ÷ all steps read (N−1)/N low.) With
    `has_gpu` and the host step (`host_step_us`), which a job of CPU-only traces compares instead."""
    from trainprof.analysis.job.diff import gpu_steps, per_step_parts

    parts = per_step_parts(rec)
    # the host's ProfilerStep ranges (median): a CPU job's step, which has no device timeline
    rows = or_default(rec.per_step, []) if or_default(rec.steps, 0) else []
    host = [r.cpu_us for r in rows if or_default(r.cpu_us, None)]
    return {"rank": rec.rank, "has_gpu": or_default(rec.has_gpu, True) is not False,
            "host_step_us": float(np.median(host)) if host else None, "step_time_us": or_default(rec.step_time_us, None),
            "compute_us": parts["compute"], "communication_us": _steps_union(rec.communication) / gpu_steps(rec),
            "idle_us": parts["idle"]}
