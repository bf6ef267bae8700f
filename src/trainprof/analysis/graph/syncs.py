"""What each host sync and each cross-stream wait waited for (the dependency graph's sync
and wait edges, depgraph.py; the clock-offset bounds, clock.py).

* cudaStreamSynchronize waits for the stream of its Kineto "Stream Sync" marker (same
  correlation id), or, when the trace has none, for the stream whose work ended last before
  the call returned (the release; work ending after the return was not waited for);
  cudaDeviceSynchronize /
  cuCtxSynchronize and a device-memory free (cudaFree, hipFree: it syncs the device) for
  every stream: per stream, the latest-ending work launched before the call;
* cudaEventSynchronize: the work the thread launched before its last cudaEventRecord
  preceding the call (a thread that recorded none before — a worker syncing on an event the
  main thread recorded — takes the latest record of any thread);
* synchronous cudaMemcpy (a D2H `.item()`): its own copy;
* cudaStreamWaitEvent: the first work the thread launched after the wait waits for the
  stream whose work, launched before the event's record (the thread's last cudaEventRecord;
  older Kineto without records: before the wait), ended last before that work started.

Work is given as `work` (GPU rows sorted by device, stream, time) with `g_gpu` its stream
group, CPU rows `cpu` (ascending) with `g_cpu` their thread group; results index `work`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainprof import namematch
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.timeline.idle import FREE_SYNC_CALLS, SYNC_CALLS, rows_named
from trainprof.trace import Kind
from trainprof.trace.ids import distinct

EVENT_RECORD = namematch.compile(r"^(cuda|hip)EventRecord")
STREAM_WAIT = namematch.compile(r"^(cuda|hip)StreamWaitEvent$")
ALL_STREAMS = namematch.compile(r"DeviceSynchronize|CtxSynchronize")
EVENT_SYNC = namematch.compile(r"EventSynchronize")
SYNC_MEMCPY = namematch.compile(r"^(cuda|hip)Memcpy(2D|DtoH|FromSymbol|WithStream)?$")
RETURN_TOL_US = 1.0  # a stream's work may end this much after the sync returned (timestamp rounding)


@dataclass(frozen=True, eq=False)
class LaunchIndex:
    """When and from which thread each GPU activity was launched, by thread and by stream."""

    ctx: Context
    l_ts: np.ndarray  # launch call's start per work (unlinked: the activity's own start)
    by_thread: dict  # thread group -> (launch times ascending, work indices)
    by_stream: list  # stream group -> (launch times ascending, index of the latest-ending so far)
    stream_of_group: dict  # (device, stream) -> stream group
    records: np.ndarray  # cudaEventRecord rows, ascending
    rec_g: np.ndarray  # their thread groups
    g_gpu: np.ndarray  # stream group per work

    @classmethod
    def build(cls, ctx: Context, cpu: np.ndarray, g_cpu: np.ndarray, work: np.ndarray,
              g_gpu: np.ndarray) -> "LaunchIndex":
        t = ctx.trace
        launch = ctx.links.launch[work]
        linked = launch >= 0
        l_ts = np.where(linked, t.ts_us[np.maximum(launch, 0)], t.ts_us[work])
        cpu_pos = np.minimum(np.searchsorted(cpu, np.maximum(launch, 0)), max(len(cpu) - 1, 0))
        # (no CPU rows at all, a trace of kernels only: cpu[cpu_pos] would index an empty array)
        on_cpu = (cpu[cpu_pos] == launch) if len(cpu) else np.zeros(len(launch), dtype=bool)
        l_g = np.where(linked & on_cpu, g_cpu[cpu_pos] if len(cpu) else -1, -1)
        by_thread = {}
        for g in np.unique(l_g[l_g >= 0]):
            idx = np.flatnonzero(l_g == g)
            o = np.argsort(l_ts[idx], kind="stable")
            by_thread[int(g)] = (l_ts[idx][o], idx[o])
        by_stream, stream_of_group = [], {}
        for g in range(int(g_gpu.max()) + 1 if len(g_gpu) else 0):
            idx = np.flatnonzero(g_gpu == g)
            first = work[idx[0]]
            stream_of_group[(int(t.device[first]), int(t.stream[first]))] = g
            idx = idx[np.argsort(l_ts[idx], kind="stable")]
            by_stream.append((l_ts[idx], idx[_running_argmax(t.end_us[work[idx]])]))
        records = rows_named(ctx, EVENT_RECORD, cpu)  # ascending rows = ascending ts
        rec_g = g_cpu[np.searchsorted(cpu, records)] if len(records) else np.zeros(0, np.int64)
        return cls(ctx, l_ts, by_thread, by_stream, stream_of_group, records, rec_g, g_gpu)

    def launched_before(self, g: int, ts: np.ndarray) -> np.ndarray:
        """Index into `work` of the last activity thread g launched before each time, -1 if none."""
        if g not in self.by_thread:
            return np.full(len(ts), -1, dtype=np.int64)
        lts, idx = self.by_thread[g]
        k = np.searchsorted(lts, ts, side="left") - 1
        return np.where(k >= 0, idx[np.maximum(k, 0)], -1)

    def before_record(self, gs: np.ndarray, tss: np.ndarray) -> np.ndarray:
        """Per query (thread, time): index into `work` of the last activity the thread launched
        before its last cudaEventRecord preceding the time, -1 if none. A thread that recorded
        no event before takes the latest record of any thread, and the work that thread
        launched before it."""
        t, records, rec_g = self.ctx.trace, self.records, self.rec_g
        out = np.full(len(gs), -1, dtype=np.int64)
        for g in np.unique(gs):
            sel = np.flatnonzero(gs == g)
            rts = t.ts_us[records[rec_g == g]]
            i = np.searchsorted(rts, tss[sel], side="left") - 1
            good = i >= 0
            out[sel[good]] = self.launched_before(int(g), rts[i[good]])
        rest = np.flatnonzero(out < 0)
        if len(rest) and len(records):
            i = np.searchsorted(t.ts_us[records], tss[rest], side="left") - 1
            has = i >= 0
            rest, i = rest[has], i[has]
            for g in np.unique(rec_g[i]):
                m = rec_g[i] == g
                out[rest[m]] = self.launched_before(int(g), t.ts_us[records[i[m]]])
        return out


def host_sync_pairs(ctx: Context, idx: LaunchIndex, cpu: np.ndarray, g_cpu: np.ndarray,
                    work: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sync rows, the freeing allocator calls among them, and every target as parallel
    arrays: sync row, index into `work`, and whether the target was chosen by its end time —
    an unmarked stream sync's, which says nothing about the clock)."""
    t = ctx.trace
    rt_rows = cpu[t.mask(Kind.RUNTIME, Kind.DRIVER)[cpu]]
    frees = rows_named(ctx, FREE_SYNC_CALLS, rt_rows)  # a device-memory free syncs the device
    syncs = np.union1d(rows_named(ctx, SYNC_CALLS, rt_rows), frees)
    s_g = g_cpu[np.searchsorted(cpu, syncs)] if len(syncs) else np.zeros(0, np.int64)
    s0 = t.ts_us[syncs]
    kind_of = {int(i): (2 if SYNC_MEMCPY.match(t.names[i]) else 1 if EVENT_SYNC.search(t.names[i])
                        else 0 if ALL_STREAMS.search(t.names[i]) or FREE_SYNC_CALLS.search(t.names[i]) else 3)
               for i in distinct(t.name_id[syncs], len(t.names))}
    s_kind = np.array([kind_of[int(i)] for i in t.name_id[syncs]], dtype=np.int8)
    # the stream a stream sync names: Kineto's cuda_sync marker with the same correlation
    markers = np.flatnonzero(t.kind == Kind.GPU_SYNC)
    m_call = ctx.links.launch[markers]
    ok = (m_call >= 0) & (t.stream[markers] >= 0)
    m_call, markers = m_call[ok], markers[ok]
    m_group = np.array([idx.stream_of_group.get((int(t.device[m]), int(t.stream[m])), -1) for m in markers],
                       dtype=np.int64)
    order_m = np.argsort(m_call, kind="stable")
    m_call, m_group = m_call[order_m], m_group[order_m]
    s_group = np.full(len(syncs), -1, dtype=np.int64)
    if len(m_call) and len(syncs):
        pos = np.minimum(np.searchsorted(m_call, syncs), len(m_call) - 1)
        s_group = np.where(m_call[pos] == syncs, m_group[pos], -1)
    # Without its marker, a stream sync waited for the stream whose work (launched before the
    # call) ended last before the call returned: that end released it. Taking every stream
    # made 258 of hta_16rank_nccl_a100_hostsync's 450 targets end after the call had returned
    # (a NCCL kernel on another stream), and the thread's last-launched stream misses a sync
    # on a collective its thread launched before more compute. Work ending after the return
    # was not waited for; when every stream's ended before the call, the call waited for none.
    blind = np.flatnonzero((s_kind == 3) & (s_group < 0))
    if len(blind) and idx.by_stream:
        s1 = t.end_us[syncs[blind]]
        best_end = np.full(len(blind), -np.inf)
        for gg, (lts, best) in enumerate(idx.by_stream):
            kk = np.searchsorted(lts, s0[blind], side="left") - 1
            e = np.where(kk >= 0, t.end_us[work[best[np.maximum(kk, 0)]]], -np.inf)
            better = (e <= s1 + RETURN_TOL_US) & (e > best_end)
            best_end[better], s_group[blind[better]] = e[better], gg
        s_kind = s_kind.copy()
        s_kind[blind[s_group[blind] < 0]] = 4  # nothing it could have waited for: no target
    launch = ctx.links.launch[work]
    # synchronous memcpy: its own copies
    is_mem = np.isin(launch, syncs[s_kind == 2])
    pair_sync, pair_work = [launch[is_mem]], [np.flatnonzero(is_mem)]
    # event sync: the work before the thread's last event record
    ev = np.flatnonzero(s_kind == 1)
    k = idx.before_record(s_g[ev], s0[ev])
    pair_sync.append(syncs[ev][k >= 0])
    pair_work.append(k[k >= 0])
    # stream / device syncs: per stream, the latest-ending work launched before the call
    # (a stream sync without its marker waits for every stream)
    for gg, (lts, best) in enumerate(idx.by_stream):
        sel = np.flatnonzero((s_kind == 0) | ((s_kind == 3) & ((s_group == gg) | (s_group < 0))))
        kk = np.searchsorted(lts, s0[sel], side="left") - 1
        pair_sync.append(syncs[sel][kk >= 0])
        pair_work.append(best[kk[kk >= 0]])
    p_sync = np.concatenate(pair_sync).astype(np.int64)
    return syncs, frees, p_sync, np.concatenate(pair_work).astype(np.int64), np.isin(p_sync, syncs[blind])


def wait_pairs(ctx: Context, idx: LaunchIndex, cpu: np.ndarray, g_cpu: np.ndarray, work: np.ndarray,
               g_gpu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cross-stream waits (cudaStreamWaitEvent) as (source work index, destination work index)."""
    t = ctx.trace
    waits = rows_named(ctx, STREAM_WAIT, cpu)
    w_g = g_cpu[np.searchsorted(cpu, waits)] if len(waits) else np.zeros(0, np.int64)
    w_ts = t.ts_us[waits]
    dst_k = np.full(len(waits), -1, dtype=np.int64)
    for g in np.unique(w_g):
        if int(g) not in idx.by_thread:
            continue
        sel = np.flatnonzero(w_g == g)
        lts, widx = idx.by_thread[int(g)]
        j = np.searchsorted(lts, w_ts[sel], side="right")
        ok = j < len(widx)
        dst_k[sel[ok]] = widx[j[ok]]
    # The event was recorded on some stream before the wait (at the thread's last
    # cudaEventRecord, else any thread's; older Kineto records none: before the wait call),
    # and completes when that stream's work launched before the record ends. Kineto does not
    # say which stream: the waiter's start was released by the one whose work ended last
    # before it (the rule for unmarked stream syncs). Before issue #39 the source was the
    # thread's last launch before the record, on whatever stream: a copy or the comm stream
    # itself, ended long before, and the waiter's delay read "idle (cross-stream wait)" while
    # the compute stream it waited for was busy.
    ref = np.where(np.isnan(rec := _record_time(idx, w_g, w_ts)), w_ts, rec)
    src_k = np.full(len(waits), -1, dtype=np.int64)
    has = np.flatnonzero(dst_k >= 0)
    d_start, d_group = t.ts_us[work[dst_k[has]]], g_gpu[dst_k[has]]
    d_dev = t.device[work[dst_k[has]]]
    best_end = np.full(len(has), -np.inf)
    for (dev, _), gg in idx.stream_of_group.items():
        lts, best = idx.by_stream[gg]
        kk = np.searchsorted(lts, ref[has], side="left") - 1
        cand = np.where(kk >= 0, best[np.maximum(kk, 0)], -1)
        e = np.where(cand >= 0, t.end_us[work[np.maximum(cand, 0)]], -np.inf)
        better = (cand >= 0) & (d_group != gg) & (d_dev == dev) & (e <= d_start + RETURN_TOL_US) & (e > best_end)
        best_end[better], src_k[has[better]] = e[better], cand[better]
    ok = (src_k >= 0) & (dst_k >= 0)
    return src_k[ok], dst_k[ok]


def _record_time(idx: LaunchIndex, gs: np.ndarray, tss: np.ndarray) -> np.ndarray:
    """Per query (thread, time): the time of the thread's last cudaEventRecord before it, else
    of any thread's; NaN when none."""
    t = idx.ctx.trace
    out = np.full(len(gs), np.nan)
    if not len(idx.records):
        return out
    rts_all = t.ts_us[idx.records]
    for g in np.unique(gs):
        sel = np.flatnonzero(gs == g)
        rts = rts_all[idx.rec_g == g]
        i = np.searchsorted(rts, tss[sel], side="left") - 1
        out[sel[i >= 0]] = rts[i[i >= 0]]
    rest = np.flatnonzero(np.isnan(out))
    i = np.searchsorted(rts_all, tss[rest], side="left") - 1
    out[rest[i >= 0]] = rts_all[i[i >= 0]]
    return out


def _running_argmax(x: np.ndarray) -> np.ndarray:
    """Index of the maximum of x[:i+1] for each i (first one on ties)."""
    if not len(x):
        return np.zeros(0, np.int64)
    run = np.maximum.accumulate(x)
    is_new = np.empty(len(x), dtype=bool)
    is_new[0] = True
    is_new[1:] = x[1:] > run[:-1]
    return np.maximum.accumulate(np.where(is_new, np.arange(len(x)), 0))
