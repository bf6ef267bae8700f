"""CPU–GPU clock offset: detect it, estimate it, correct it, and say so.

Kineto writes GPU activity on the host's clock (CUPTI/roctracer convert device timestamps).
When that conversion is off by a constant δ (a GPU time as recorded = the true one + δ),
the trace contradicts itself, and the contradiction bounds δ:

* a launch call starts before the work it launches: true GPU start ≥ call start, so
  δ ≤ U = min over linked work of (recorded start − launch call start). U < 0 means GPU
  work "starts before it was launched": the GPU clock is behind by at least −U;
* a host sync returns after the work it waited for (syncs.py picks that work): δ ≥ L =
  max over syncs of (recorded work end − call end). L > 0 means a sync "returned before its
  work ended", i.e. the GPU was in fact idle while the trace shows it still busy (and every
  launch after it shows a launch "latency" of about δ: the case of issue #28, a copy
  launched at +0.5 ms starting at +8.4 ms while an event sync showed the GPU idle).

A consistent trace has L ≤ 0 ≤ U up to clock jitter (a few µs; a deep queue makes U large
but never L positive, so a GPU that runs far behind its host is not an offset). Only the
syncs whose target is certain count for L (device syncs, synchronous copies, stream syncs
with their Kineto marker, event syncs; not frees, which only "may" sync, nor unmarked stream
syncs, whose target syncs.py picks by its end time). Estimate, only when the other bound agrees
(L ≤ U + MIN_OFFSET_US; else the trace contradicts itself both ways — wrong links, not an
offset — and nothing is changed):

* L > MIN_OFFSET_US: δ = the smallest recorded delay of a launch that found its stream idle
  whatever δ is (its stream's previous work ended, recorded, ≤ L after the call began): that
  delay is δ plus one true launch latency (µs), the tightest of the two bounds when no sync
  actually waited (L is then δ minus the time the GPU had already been idle);
* U < −MIN_OFFSET_US: δ = U (the earliest launch starts its work at once).

Each estimate errs by one launch latency (µs against the ms offsets worth correcting).

Correction: every GPU-lane row (kernels, copies, memsets, GPU annotations, sync markers)
moves by −δ, and a note in the analysis record says so. Limits: one constant offset per
trace (a drifting clock leaves the rest); with no sync in the trace a positive offset cannot
be seen (it reads as launch latency); offsets below MIN_OFFSET_US are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from trainprof.analysis.timeline.context import Context
from trainprof.analysis.graph.depgraph import CPU_KINDS
from trainprof.analysis.graph.syncs import LaunchIndex, host_sync_pairs
from trainprof.trace import Kind, find_steps
from trainprof.trace.kinds import GPU_WORK_KINDS
from trainprof.trace.nesting import group_ids

# Below this an offset is indistinguishable from launch latency and sync wake-up (5-50 µs
# on the shipped traces) and from clock jitter, and changes no conclusion.
MIN_OFFSET_US = 50.0
GPU_LANE_KINDS = (*GPU_WORK_KINDS, Kind.GPU_USER_ANNOTATION, Kind.GPU_SYNC)


@dataclass(frozen=True)
class Offset:
    offset_us: float  # the estimate δ (0: none found or none trusted)
    lower_us: float  # L: from syncs (−inf without any)
    upper_us: float  # U: from launches (+inf without any)
    syncs: int  # sync targets behind L
    launches: int  # linked launches behind U


def bounds(ctx: Context) -> Offset:
    """L and U (module docstring) and the estimate they give."""
    t = ctx.trace
    work = ctx.work
    work = work[np.lexsort((t.ts_us[work], t.stream[work], t.device[work]))]
    launch = ctx.links.launch[work]
    linked = launch >= 0
    delay = t.ts_us[work] - t.ts_us[np.maximum(launch, 0)]
    upper = float(delay[linked].min()) if linked.any() else np.inf
    cpu = np.flatnonzero(t.mask(*CPU_KINDS))
    g_cpu = group_ids(t.pid[cpu], t.tid[cpu]) if len(cpu) else np.zeros(0, np.int64)
    g_gpu = group_ids(t.device[work], t.stream[work]) if len(work) else np.zeros(0, np.int64)
    _, frees, p_sync, p_work, by_time = host_sync_pairs(ctx, LaunchIndex.build(ctx, cpu, g_cpu, work, g_gpu), cpu,
                                                        g_cpu, work)
    # a free "may" sync the device (CUDA runtime API docs), and an unmarked stream sync's
    # target was picked by its end time: neither is evidence of where the clock is
    keep = ~np.isin(p_sync, frees) & ~by_time
    p_sync, p_work = p_sync[keep], p_work[keep]
    lower = float((t.end_us[work[p_work]] - t.end_us[p_sync]).max()) if len(p_sync) else -np.inf
    est = 0.0
    if lower > MIN_OFFSET_US and lower <= upper + MIN_OFFSET_US:
        # δ ≥ L, so a launch whose stream's previous work ended (recorded) ≤ L after the call
        # began found its stream idle whatever δ is: its recorded delay is δ plus a true launch
        # latency (µs). The smallest such delay is the estimate; U over every launch would
        # also count queueing (a GPU running behind its host: tracelens_mi300_resnet's 21 ms).
        prev_end = np.full(len(work), -np.inf)
        same = np.flatnonzero(g_gpu[1:] == g_gpu[:-1])
        prev_end[same + 1] = t.end_us[work[same]]
        idle = linked & (prev_end - lower <= t.ts_us[np.maximum(launch, 0)])
        est = float(delay[idle].min()) if idle.any() else lower
        est = max(est, lower)
    elif upper < -MIN_OFFSET_US and lower <= upper + MIN_OFFSET_US:
        est = upper
    return Offset(est, lower, upper, int(len(p_sync)), int(linked.sum()))


def corrected(ctx: Context) -> tuple[Context, Offset]:
    """The context on a trace whose GPU lanes moved by −δ (with a note), or itself."""
    off = bounds(ctx)
    if off.offset_us == 0.0:
        return ctx, off
    t = ctx.trace
    gpu = t.mask(*GPU_LANE_KINDS)
    ts, end = t.ts_us.copy(), t.end_us.copy()
    ts[gpu] -= off.offset_us
    end[gpu] -= off.offset_us
    how = (f"{off.syncs} host syncs returned up to {off.offset_us / 1e3:,.3f} ms before the GPU work they waited "
           "for ended" if off.offset_us > 0 else
           f"GPU work started up to {-off.offset_us / 1e3:,.3f} ms before the call that launched it")
    note = (f"GPU clock offset corrected: the trace's GPU timestamps are {off.offset_us / 1e3:+,.3f} ms off the "
            f"host's ({how}); GPU activity was moved by {-off.offset_us / 1e3:+,.3f} ms before the analysis, so "
            "launch latency and idle causes are not billed the offset (docs/critical-path.md)")
    t2 = replace(t, ts_us=ts, end_us=end, notes=(*t.notes, note))
    # links are by correlation id (unchanged); steps' GPU extents move with the work
    return Context(t2, ctx.links, find_steps(t2, ctx.links), ctx.classes), off
