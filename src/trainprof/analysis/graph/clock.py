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

* `idle_launch_min`: the smallest recorded delay of a launch that found the whole device idle
  whatever δ near the bound is (all work begun before it ended, recorded, ≤ the bound after
  the call began): δ plus one true launch latency (µs);
* `idle_launch_median`: the median delay of those launches: δ plus a typical launch latency;
* `post_sync_launch_median`: the median delay of the first launch each sync's thread made
  after the sync returned, where the device was idle (a sync leaves it so): δ plus a typical
  launch latency.

δ is the median of the estimators that apply, held to the bound (≥ L, or ≤ U), and
`spread_us` (max − min of the estimators) the error it is stated with (µs on the shipped and
planted traces against the ms offsets worth correcting). The bound (`sync_bound` L,
`launch_bound` U) is reported beside them but is no estimate: L lies below δ by the time the
device had idled before the sync that gives it. With no launch found idle the bound is the
estimate. Issue #39 item 1.

Correction: every GPU-lane row (kernels, copies, memsets, GPU annotations, sync markers)
moves by −δ, and a note in the analysis record says so. Limits: one constant offset per
trace (a drifting clock leaves the rest); with no sync in the trace a positive offset cannot
be seen (it reads as launch latency); offsets below MIN_OFFSET_US are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from trainprof.analysis.timeline.context import Context
from trainprof.analysis.graph.depgraph import CPU_KINDS, device_busy_until
from trainprof.analysis.graph.syncs import LaunchIndex, host_sync_pairs
from trainprof.trace import Kind, find_steps
from trainprof.trace.kinds import GPU_WORK_KINDS
from trainprof.trace.nesting import group_ids
from trainprof.recordtypes.graph import ClockRec

# Below this an offset is indistinguishable from launch latency and sync wake-up (5-50 µs
# on the shipped traces) and from clock jitter, and changes no conclusion.
MIN_OFFSET_US = 50.0
GPU_LANE_KINDS = (*GPU_WORK_KINDS, Kind.GPU_USER_ANNOTATION, Kind.GPU_SYNC)


@dataclass(frozen=True)
class Offset:
    offset_us: float  # the estimate δ: the median of the estimators (0: none found or none trusted)
    lower_us: float  # L: from syncs (−inf without any)
    upper_us: float  # U: from launches (+inf without any)
    syncs: int  # sync targets behind L
    launches: int  # linked launches behind U
    estimates: tuple[tuple[str, float], ...] = ()  # (estimator, value) behind the estimate
    spread_us: float = 0.0  # max − min of the estimates: the error the correction may carry

    def record(self) -> ClockRec:
        fin = (lambda v: round(float(v), 3) if np.isfinite(v) else None)
        return ClockRec(offset_us=round(self.offset_us, 3), spread_us=round(self.spread_us, 3),
                        lower_us=fin(self.lower_us), upper_us=fin(self.upper_us),
                        estimates_us={k: round(v, 3) for k, v in self.estimates})


def bounds(ctx: Context) -> Offset:
    """L and U (module docstring), the estimators they allow and their median."""
    t = ctx.trace
    work = ctx.work
    work = work[np.lexsort((t.ts_us[work], t.stream[work], t.device[work]))]
    launch = ctx.links.launch[work]
    linked = launch >= 0
    call = t.ts_us[np.maximum(launch, 0)]
    delay = t.ts_us[work] - call
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
    off = Offset(0.0, lower, upper, int(len(p_sync)), int(linked.sum()))
    if lower > MIN_OFFSET_US and lower <= upper + MIN_OFFSET_US:
        d0, bound = lower, ("sync_bound", lower)  # δ ≥ L
    elif upper < -MIN_OFFSET_US and lower <= upper + MIN_OFFSET_US:
        d0, bound = upper, ("launch_bound", upper)  # δ ≤ U
    else:
        return off
    # Launches that found the whole device idle, on the host's clock, for any δ near d0: all
    # work begun before them (recorded) ended, minus d0, before the call. Their recorded delay
    # is δ plus a true launch latency (µs); counting every launch would count queueing too
    # (a GPU running behind its host: tracelens_mi300_resnet's 21 ms).
    idle = linked & (device_busy_until(t, work) - d0 <= call)
    est = []
    if idle.any():
        est += [("idle_launch_min", float(delay[idle].min())), ("idle_launch_median", float(np.median(delay[idle])))]
        after = _first_after_syncs(t, ctx.links.launch, work, idle, np.unique(p_sync))
        if len(after):
            # each sync leaves the device idle (it waited for its work): the thread's next
            # launch starts after δ plus one launch latency (issue #28: a copy 7.8 ms after an
            # event sync that returned in 2 µs)
            est.append(("post_sync_launch_median", float(np.median(delay[after]))))
    vals = np.array([v for _, v in est]) if est else np.array([bound[1]])
    # the bound is a bound, not an estimate (L lies below δ by the time the device had idled
    # before its sync): it only clamps the median
    delta = float(np.median(vals))
    delta = max(delta, lower) if d0 > 0 else min(delta, upper)
    return Offset(delta, lower, upper, off.syncs, off.launches, (bound, *est), float(vals.max() - vals.min()))


def _first_after_syncs(t, launch_of: np.ndarray, work: np.ndarray, ok: np.ndarray, syncs: np.ndarray) -> np.ndarray:
    """Indices into `work` of the first linked launch on each sync's thread after the sync
    returned, where `ok` (the device idle at the call)."""
    linked = np.flatnonzero(launch_of[work] >= 0)
    calls = launch_of[work[linked]]
    out = []
    for s in syncs:
        same = (t.pid[calls] == t.pid[s]) & (t.tid[calls] == t.tid[s]) & (t.ts_us[calls] >= t.end_us[s])
        if same.any():
            k = linked[np.flatnonzero(same)[np.argmin(t.ts_us[calls[same]])]]
            if ok[k]:
                out.append(k)
    return np.unique(np.array(out, dtype=np.int64))


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
            f"host's, ±{off.spread_us / 1e3:,.3f} ms (the median of {len(off.estimates)} estimators and their "
            f"spread; {how}); GPU activity was moved by {-off.offset_us / 1e3:+,.3f} ms before the analysis, so "
            "launch latency and idle causes are not billed the offset (docs/critical-path.md)")
    t2 = replace(t, ts_us=ts, end_us=end, notes=(*t.notes, note))
    # links are by correlation id (unchanged); steps' GPU extents move with the work
    return Context(t2, ctx.links, find_steps(t2, ctx.links), ctx.classes), off
