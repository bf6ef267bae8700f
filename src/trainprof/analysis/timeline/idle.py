"""Why the GPU waited: each idle gap gets one cause, with call sites.

For a gap [g0, g1] in the union of GPU activity, look at the activity that ends it and at
its launch (runtime call) time L on the host:

* L ≤ g0 + tol: the work was already queued when the GPU went idle, so the host was not
  the reason (a cross-stream/event dependency, a collective waiting for peers) → `other`.
* otherwise the host launched late, and we ask what it was doing:
  1. `data_loading` — a DataLoader range (`enumerate(DataLoader)#…`, `trainprof.data`)
     covers at least half of the gap;
  2. `allocator` — device-memory allocator calls (cudaMalloc/cudaFree, hipMalloc/hipFree,
     their host/managed/async twins, cuMemAlloc/cuMemFree) cover at least half of the gap,
     or a freeing call (which synchronises the device) returned inside [g0 − tol, L]: the
     caching allocator was cold, or `torch.cuda.empty_cache()` ran in the loop;
  3. `host_sync` — a blocking call (cudaStreamSynchronize, cudaDeviceSynchronize,
     cudaEventSynchronize, synchronous cudaMemcpy, and their hip* twins) returned inside
     [g0 − tol, L]: the host drained the GPU's queue (`.item()`, `.cpu()`, `print(t)`),
     and the GPU idled while the host caught up;
  4. `host_launch` — none of those: the host was simply too slow to keep the queue fed
     (Python overhead, many tiny kernels, CPU-side work).
* no launch linked (kernels launched before the profiler window) → `unattributed`.

One cause per gap (priority as listed) keeps the parts adding up to the idle time. The
longest MAX_INTERVALS gaps are kept with their cause (`intervals`, in time order) for the
timeline (`analyze --perfetto` draws them as an "idle cause" track).

Which gaps: those of the temporal breakdown's rows inside its window (Context.window: HTA's,
from the first to the last end of the GPU work launched before the last profiler step
began; Context.timeline: every GPU row running inside it, including work whose launch the
trace lacks, which HTA would call idle), so `idle_us` and `span_us` here are the
breakdown's, and causes ≤ idle ≤ span (asserted below). Until
issue #32 the gaps were those of every step's work: on hta_ddp_2rank_nccl_a100 that gave
"3480 gaps, 503.1 ms" of idle under a breakdown whose idle was 336.4 ms of a 435.6 ms span
(two windows, one report). The last step's own gaps are in the per-step rows
(temporal.per_step), not here.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from trainprof import namematch
from trainprof.namematch import NamePattern
from trainprof.analysis.timeline import intervals as iv
from trainprof.analysis.timeline.callsite import user_frames
from trainprof.analysis.timeline.context import Context
from trainprof.recordtypes.timeline import CallSite, IdleBreakdown, IdleIntervals, NameCount, Spans
from trainprof.trace import Kind
from trainprof.vocab.idle import ALLOCATOR, CAUSES, DATA_LOADING, HOST_LAUNCH, HOST_SYNC, OTHER, UNATTRIBUTED

TOLERANCE_US = 5.0  # host and GPU clocks in a Kineto trace agree to a few µs
DATA_SHARE = 0.5  # a gap is a data wait when a DataLoader range covers this share of it
DATALOADER = namematch.compile(r"enumerate\(DataLoader\)|DataLoader|^trainprof\.data$|_DataLoaderIter")
SYNC_CALLS = namematch.compile(
    r"^(cuda|hip)(StreamSynchronize|DeviceSynchronize|EventSynchronize|Memcpy|Memcpy2D|"
    r"MemcpyFromSymbol|MemcpyDtoH|MemcpyWithStream)$|^cuCtxSynchronize$|^cuStreamSynchronize$")
# Device-memory allocator calls (CUDA runtime/driver, HIP). The freeing ones synchronise the
# device before they return (CUDA C Programming Guide, "Implicit Synchronization": a device
# memory free waits for the device to be idle; HIP documents the same for hipFree), the
# stream-ordered *Async ones do not.
ALLOC_CALLS = namematch.compile(
    r"^(cuda|hip)(Malloc|Free)(Host|Managed|Pitch|Array|3D|3DArray|Async|FromPoolAsync)?(_v\d+)?$"
    r"|^(cuda|hip)Host(Alloc|Malloc|Free)$|^hipExtMallocWithFlags$|^cuMem(Alloc|Free)(Host|Managed|Pitch|Async)?(_v\d+)?$")
FREE_SYNC_CALLS = namematch.compile(r"^(cuda|hip)Free(Host|Array)?$|^(cuda|hip)HostFree$|^cuMemFree(Host)?(_v\d+)?$")
SYNC_OPS = namematch.compile(r"^aten::(item|_local_scalar_dense|nonzero|equal|is_nonzero|allclose)$")
ALLOC_SHARE = 0.5  # a gap is the allocator's when its calls cover this share of it (as DATA_SHARE)
MAX_INTERVALS = 1000  # per rank: the longest gaps, ~40 KB of analysis.json


def rows_named(ctx: Context, pattern: NamePattern, rows: np.ndarray) -> np.ndarray:
    """The `rows` whose name matches. Only the names those rows carry are searched, not every
    name of the trace: kernel names are most of a trace's distinct names and can be
    thousands of characters (C++ signatures)."""
    t = ctx.trace
    nid = t.name_id[rows]
    # a bincount and a lookup table, not np.unique's and np.isin's sorts: build_graph's 5
    # calls on the DDP trace 3.8 → 1.6 ms (median of 21, three runs)
    hit = np.bincount(nid, minlength=len(t.names)) > 0
    hit[hit] = [bool(pattern.search(t.names[i])) for i in np.flatnonzero(hit).tolist()]
    return rows[hit[nid]]


def _matching(ctx: Context, pattern: NamePattern, kinds: tuple[Kind, ...]) -> np.ndarray:
    return rows_named(ctx, pattern, np.flatnonzero(ctx.trace.mask(*kinds)))


def dataloader_rows(ctx: Context) -> np.ndarray:
    return _matching(ctx, DATALOADER, (Kind.USER_ANNOTATION, Kind.CPU_OP, Kind.PYTHON_FUNCTION))


def sync_call_rows(ctx: Context) -> np.ndarray:
    return _matching(ctx, SYNC_CALLS, (Kind.RUNTIME, Kind.DRIVER))


def allocator_rows(ctx: Context) -> np.ndarray:
    return _matching(ctx, ALLOC_CALLS, (Kind.RUNTIME, Kind.DRIVER))


def _op_chain(ctx: Context, row: int) -> str | None:
    """The call's enclosing ops, outermost first, e.g. 'aten::item > aten::_local_scalar_dense'."""
    op = int(ctx.links.op[row]) if row >= 0 else -1
    chain = []
    while op >= 0 and len(chain) < 4:
        chain.append(ctx.trace.name(op))
        op = int(ctx.links.op_parent[op])
    return " > ".join(reversed(chain)) if chain else None


def idle_breakdown(ctx: Context, top_sites: int = 5) -> IdleBreakdown:
    t = ctx.trace
    result: dict = {f"{c}_us": 0.0 for c in CAUSES}
    result.update(gaps=0, idle_us=0.0)
    syncs = sync_call_rows(ctx)
    result["sync_calls"] = _count(ctx, syncs)
    result["sync_ops"] = _count(ctx, _matching(ctx, SYNC_OPS, (Kind.CPU_OP,)))
    allocs = allocator_rows(ctx)
    result["allocator_calls"] = _count(ctx, allocs)
    dl = dataloader_rows(ctx)
    dl_s, dl_e = iv.union(t.ts_us[dl], t.end_us[dl])
    result["dataloader_us"] = float((dl_e - dl_s).sum())
    if not ctx.has_gpu:
        result["call_sites"] = []
        return IdleBreakdown(**result)

    # The temporal breakdown's window and rows (Context.window, Context.timeline), so that
    # idle and span are its own: HTA's window, every GPU row running inside it.
    rows = ctx.timeline
    lo, hi = ctx.window
    ws, we = iv.clip(*ctx.spans(rows), lo, hi)
    result["span_us"] = hi - lo if len(ctx.timeline_hta) else 0.0
    # Shares of figures measured over every step's work (communication, copies, optimizer:
    # diagnose/rules.py) need that window's span, not the breakdown's.
    aw_s, aw_e = ctx.spans(ctx.work)
    result["work_span_us"] = float(aw_e.max() - aw_s.min())
    if not len(ctx.timeline_hta):
        result["call_sites"] = []
        return IdleBreakdown(**_pcts(result))
    gs, ge = iv.gaps(ws, we, lo, hi)
    result["gaps"] = int(len(gs))
    result["idle_us"] = float((ge - gs).sum())
    if not len(gs):
        result["call_sites"] = []
        return IdleBreakdown(**_pcts(result))

    cause, sync_gaps, first_sync = _causes(ctx, rows, gs, ge, syncs, allocs, (dl_s, dl_e))
    dur = ge - gs
    for i, c in enumerate(CAUSES):
        result[f"{c}_us"] = float(dur[cause == i].sum())
    keep = np.sort(np.argsort(-dur, kind="stable")[:MAX_INTERVALS])
    result["intervals"] = IdleIntervals(start_us=[round(float(x), 3) for x in gs[keep]],
                                        dur_us=[round(float(x), 3) for x in dur[keep]],
                                        cause=[CAUSES[c] for c in cause[keep].tolist()])

    # Call sites of the sync gaps: which blocking call, under which op, from which line
    # (op and python are None where the trace does not record them).
    frames = user_frames(ctx, first_sync)  # the user's line, not <built-in method to ...>
    sites: dict[tuple, list] = defaultdict(lambda: [0, 0.0])
    for g, r, fr in zip(sync_gaps, first_sync, frames):
        key = (t.name(int(r)), _op_chain(ctx, int(r)), fr)
        sites[key][0] += 1
        sites[key][1] += float(dur[g])
    ranked = sorted(sites.items(), key=lambda kv: -kv[1][1])[:top_sites]
    result["call_sites"] = [CallSite(call=k[0], op=k[1], python=k[2], gaps=v[0], idle_us=v[1]) for k, v in ranked]
    return IdleBreakdown(**check_parts(_pcts(result)))


def _causes(ctx: Context, rows: np.ndarray, gs: np.ndarray, ge: np.ndarray, syncs: np.ndarray,
            allocs: np.ndarray, dl: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cause index per gap, the host_sync gaps, the first sync call returning in each)."""
    t = ctx.trace
    ws = t.ts_us[rows]
    # The activity that ends each gap: the earliest one starting at the gap's end.
    order = np.argsort(ws, kind="stable")
    nxt = rows[order[np.minimum(np.searchsorted(ws[order], ge - 1e-9), len(order) - 1)]]
    launch = ctx.links.launch[nxt]
    L = np.where(launch >= 0, t.ts_us[np.maximum(launch, 0)], np.nan)
    dur = ge - gs
    until = np.minimum(np.nan_to_num(L, nan=-np.inf), ge)

    cause = np.full(len(gs), CAUSES.index(HOST_LAUNCH))
    cause[launch < 0] = CAUSES.index(UNATTRIBUTED)
    queued = (launch >= 0) & (L <= gs + TOLERANCE_US)
    cause[queued] = CAUSES.index(OTHER)
    host = (launch >= 0) & ~queued

    # Sync calls returning inside [g0 - tol, L].
    sync_end = t.end_us[syncs]
    so = np.argsort(sync_end)
    se, srow = sync_end[so], syncs[so]
    lo = np.searchsorted(se, gs - TOLERANCE_US, side="left")
    hi = np.searchsorted(se, until, side="right")
    cause[host & (hi > lo)] = CAUSES.index(HOST_SYNC)
    # The allocator wins over a sync: a freeing call syncs the device itself, and the fix
    # (a warm caching allocator) differs from removing .item().
    frees = rows_named(ctx, FREE_SYNC_CALLS, allocs)
    fe = np.sort(t.end_us[frees])
    freed = np.searchsorted(fe, until, side="right") > np.searchsorted(fe, gs - TOLERANCE_US, side="left")
    a_s, a_e = iv.union(t.ts_us[allocs], t.end_us[allocs])
    a_cov = iv.covered_within(a_s, a_e, gs, ge) if len(a_s) else np.zeros(len(gs))
    cause[host & (freed | (a_cov >= ALLOC_SHARE * dur))] = CAUSES.index(ALLOCATOR)
    # Data loading wins over both: the loader's own pin/copy can sync and allocate too.
    covered = iv.covered_within(dl[0], dl[1], gs, ge) if len(dl[0]) else np.zeros(len(gs))
    cause[host & (covered >= DATA_SHARE * dur)] = CAUSES.index(DATA_LOADING)
    sync_gaps = np.flatnonzero(cause == CAUSES.index(HOST_SYNC))
    first_sync = srow[np.minimum(lo[sync_gaps], len(srow) - 1)] if len(srow) else np.zeros(0, np.int64)
    return cause, sync_gaps, first_sync


def check_parts(result: dict) -> dict:
    """Findings are claims: the causes add up to the idle time, which is ≤ the span."""
    parts = sum(result[f"{c}_us"] for c in CAUSES)
    idle, span = result["idle_us"], result.get("span_us", 0.0)
    if not np.isfinite([parts, idle, span]).all():  # absurd timestamps (a fuzzed trace): nothing to claim
        return result
    tol = 1e-6 * max(1.0, abs(span))
    if not (abs(parts - idle) <= tol and idle <= span + tol):
        raise AssertionError(f"idle causes {parts} µs, idle {idle} µs, span {span} µs: the parts must add up")
    return result


def _pcts(result: dict) -> dict:
    idle = result["idle_us"]
    for c in CAUSES:
        result[f"{c}_pct"] = 100.0 * result[f"{c}_us"] / idle if idle > 0 else 0.0
    return result


def _count(ctx: Context, rows: np.ndarray) -> list[NameCount]:
    """Calls per name with their host time, most frequent first."""
    t = ctx.trace
    counts = Counter(t.names_of(rows))
    total: dict[str, float] = defaultdict(float)
    for n, d in zip(t.names_of(rows), t.dur_us[rows]):
        total[n] += float(d)
    return [NameCount(name=n, count=c, total_us=total[n]) for n, c in counts.most_common()]


def sync_spans(ctx: Context) -> Spans | None:
    """The blocking host calls (SYNC_CALLS) as host intervals, the longest MAX_INTERVALS in
    time order: the job analysis asks which of them a collective waiting for a late peer
    released (analysis/job/symptoms.py). None on a CPU-only trace."""
    if not ctx.has_gpu:
        return None
    t = ctx.trace
    rows = sync_call_rows(ctx)
    keep = np.sort(rows[np.argsort(-t.dur_us[rows], kind="stable")[:MAX_INTERVALS]])
    return Spans(start_us=[round(float(x), 3) for x in t.ts_us[keep]],
                 end_us=[round(float(x), 3) for x in t.end_us[keep]])
