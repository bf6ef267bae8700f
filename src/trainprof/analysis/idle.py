"""Why the GPU waited: each idle gap gets one cause, with call sites.

For a gap [g0, g1] in the union of GPU activity, look at the activity that ends it and at
its launch (runtime call) time L on the host:

* L ≤ g0 + tol: the work was already queued when the GPU went idle, so the host was not
  the reason (a cross-stream/event dependency, a collective waiting for peers) → `other`.
* otherwise the host launched late, and we ask what it was doing:
  1. `data_loading` — a DataLoader range (`enumerate(DataLoader)#…`, `trainprof.data`)
     covers at least half of the gap;
  2. `host_sync` — a blocking call (cudaStreamSynchronize, cudaDeviceSynchronize,
     cudaEventSynchronize, synchronous cudaMemcpy, and their hip* twins) returned inside
     [g0 − tol, L]: the host drained the GPU's queue (`.item()`, `.cpu()`, `print(t)`),
     and the GPU idled while the host caught up;
  3. `host_launch` — none of those: the host was simply too slow to keep the queue fed
     (Python overhead, many tiny kernels, CPU-side work).
* no launch linked (kernels launched before the profiler window) → `unattributed`.

One cause per gap (priority as listed) keeps the parts adding up to the idle time. The
longest MAX_INTERVALS gaps are kept with their cause (`intervals`, in time order) for the
timeline (`analyze --perfetto` draws them as an "idle cause" track). The gaps
are those of all GPU activity (every step), so `idle_us` here can exceed the HTA-style
temporal breakdown's, which leaves the last profiler step out.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import numpy as np

from trainprof.analysis import intervals as iv
from trainprof.analysis.callsite import user_frames
from trainprof.analysis.context import Context
from trainprof.trace import Kind

TOLERANCE_US = 5.0  # host and GPU clocks in a Kineto trace agree to a few µs
DATA_SHARE = 0.5  # a gap is a data wait when a DataLoader range covers this share of it
DATALOADER = re.compile(r"enumerate\(DataLoader\)|DataLoader|^trainprof\.data$|_DataLoaderIter")
SYNC_CALLS = re.compile(
    r"^(cuda|hip)(StreamSynchronize|DeviceSynchronize|EventSynchronize|Memcpy|Memcpy2D|"
    r"MemcpyFromSymbol|MemcpyDtoH|MemcpyWithStream)$|^cuCtxSynchronize$|^cuStreamSynchronize$")
SYNC_OPS = re.compile(r"^aten::(item|_local_scalar_dense|nonzero|equal|is_nonzero|allclose)$")
CAUSES = ("data_loading", "host_sync", "host_launch", "other", "unattributed")
MAX_INTERVALS = 1000  # per rank: the longest gaps, ~40 KB of analysis.json


def rows_named(ctx: Context, pattern: re.Pattern[str], rows: np.ndarray) -> np.ndarray:
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


def _matching(ctx: Context, pattern: re.Pattern[str], kinds: tuple[Kind, ...]) -> np.ndarray:
    return rows_named(ctx, pattern, np.flatnonzero(ctx.trace.mask(*kinds)))


def dataloader_rows(ctx: Context) -> np.ndarray:
    return _matching(ctx, DATALOADER, (Kind.USER_ANNOTATION, Kind.CPU_OP, Kind.PYTHON_FUNCTION))


def sync_call_rows(ctx: Context) -> np.ndarray:
    return _matching(ctx, SYNC_CALLS, (Kind.RUNTIME, Kind.DRIVER))


def _op_chain(ctx: Context, row: int) -> str | None:
    """The call's enclosing ops, outermost first, e.g. 'aten::item > aten::_local_scalar_dense'."""
    op = int(ctx.links.op[row]) if row >= 0 else -1
    chain = []
    while op >= 0 and len(chain) < 4:
        chain.append(ctx.trace.name(op))
        op = int(ctx.links.op_parent[op])
    return " > ".join(reversed(chain)) if chain else None


def idle_breakdown(ctx: Context, top_sites: int = 5) -> dict:
    t = ctx.trace
    result: dict = {f"{c}_us": 0.0 for c in CAUSES}
    result.update(gaps=0, idle_us=0.0)
    syncs = sync_call_rows(ctx)
    result["sync_calls"] = _count(ctx, syncs)
    result["sync_ops"] = _count(ctx, _matching(ctx, SYNC_OPS, (Kind.CPU_OP,)))
    dl = dataloader_rows(ctx)
    dl_s, dl_e = iv.union(t.ts_us[dl], t.end_us[dl])
    result["dataloader_us"] = float((dl_e - dl_s).sum())
    if not ctx.has_gpu:
        result["call_sites"] = []
        return result

    # Every step's GPU work (not HTA's last-step filter of the temporal breakdown): the
    # evidence for why the GPU waited is worth keeping, the data wait before the last
    # step included.
    rows = ctx.work
    ws, we = ctx.spans(rows)
    result["span_us"] = float(we.max() - ws.min())
    gs, ge = iv.gaps(ws, we)
    result["gaps"] = int(len(gs))
    result["idle_us"] = float((ge - gs).sum())
    if not len(gs):
        result["call_sites"] = []
        return _pcts(result)

    # The activity that ends each gap: the earliest one starting at the gap's end.
    order = np.argsort(ws, kind="stable")
    nxt = rows[order[np.minimum(np.searchsorted(ws[order], ge - 1e-9), len(order) - 1)]]
    launch = ctx.links.launch[nxt]
    L = np.where(launch >= 0, t.ts_us[np.maximum(launch, 0)], np.nan)
    dur = ge - gs

    cause = np.full(len(gs), CAUSES.index("host_launch"))
    cause[launch < 0] = CAUSES.index("unattributed")
    queued = (launch >= 0) & (L <= gs + TOLERANCE_US)
    cause[queued] = CAUSES.index("other")
    host = (launch >= 0) & ~queued

    # Sync calls returning inside [g0 - tol, L].
    sync_end = t.end_us[syncs]
    so = np.argsort(sync_end)
    se, srow = sync_end[so], syncs[so]
    lo = np.searchsorted(se, gs - TOLERANCE_US, side="left")
    hi = np.searchsorted(se, np.minimum(np.nan_to_num(L, nan=-np.inf), ge), side="right")
    has_sync = host & (hi > lo)
    cause[has_sync] = CAUSES.index("host_sync")
    # Data loading wins over sync: the loader's own pin/copy can sync too.
    covered = iv.covered_within(dl_s, dl_e, gs, ge) if len(dl_s) else np.zeros(len(gs))
    cause[host & (covered >= DATA_SHARE * dur)] = CAUSES.index("data_loading")

    for i, c in enumerate(CAUSES):
        result[f"{c}_us"] = float(dur[cause == i].sum())
    keep = np.sort(np.argsort(-dur, kind="stable")[:MAX_INTERVALS])
    result["intervals"] = {"start_us": [round(float(x), 3) for x in gs[keep]],
                           "dur_us": [round(float(x), 3) for x in dur[keep]],
                           "cause": [CAUSES[c] for c in cause[keep].tolist()]}

    # Call sites of the sync gaps: which blocking call, under which op, from which line.
    sync_gaps = np.flatnonzero(cause == CAUSES.index("host_sync"))
    first_sync = srow[np.minimum(lo[sync_gaps], len(srow) - 1)] if len(srow) else np.zeros(0, np.int64)
    frames = user_frames(ctx, first_sync)  # the user's line, not <built-in method to ...>
    sites: dict[tuple, list] = defaultdict(lambda: [0, 0.0])
    for g, r, fr in zip(sync_gaps, first_sync, frames):
        key = (t.name(int(r)), _op_chain(ctx, int(r)), fr)
        sites[key][0] += 1
        sites[key][1] += float(dur[g])
    ranked = sorted(sites.items(), key=lambda kv: -kv[1][1])[:top_sites]
    result["call_sites"] = [
        {"call": k[0], "op": k[1], "python": k[2], "gaps": v[0], "idle_us": v[1]} for k, v in ranked
    ]
    return _pcts(result)


def _pcts(result: dict) -> dict:
    idle = result["idle_us"]
    for c in CAUSES:
        result[f"{c}_pct"] = 100.0 * result[f"{c}_us"] / idle if idle > 0 else 0.0
    return result


def _count(ctx: Context, rows: np.ndarray) -> list[dict]:
    """Calls per name with their host time, most frequent first."""
    t = ctx.trace
    counts = Counter(t.names_of(rows))
    total: dict[str, float] = defaultdict(float)
    for n, d in zip(t.names_of(rows), t.dur_us[rows]):
        total[n] += float(d)
    return [{"name": n, "count": c, "total_us": total[n]} for n, c in counts.most_common()]
