"""The training loop's iteration, read from a repeated annotation when ProfilerStep is absent.

A profiler driven without `.step()` (the shared RTX 2080 Ti ResNet trace, HTA's
`step_based_trace`) still records the annotations PyTorch puts in every iteration:
`enumerate(DataLoader)#…__next__` (one per batch: the `for` loop itself),
`Optimizer.step#…` and `Optimizer.zero_grad#…` (one per update), and whatever
`record_function` ranges the user wrote (`execute_context_…`, `## train_step ##`). The rule:

1. Candidates: user annotations (and, in PyTorch 1.x traces that filed them as ops, the
   DataLoader/optimizer ranges) that are *top-level*: no enclosing CPU op or annotation of
   their thread repeats ≥ MIN_REPEATS times (one outer `## training ##` range is allowed;
   an `nccl:all_reduce` inside a repeated backward op is not an iteration).
2. Per (name, thread): ≥ MIN_REPEATS occurrences, *regular* — at least REGULAR_SHARE of the
   periods between consecutive starts hold a similar amount of work (WORK_BAND × the median
   count of GPU launches, or of CPU ops on a trace without GPU work) — and *covering most of
   the trace* (first start to last start plus the median period ≥ MIN_COVER of its span).
   Work, not time: a loop that waits for its DataLoader has periods from 124 to 829 ms (the
   RTX 2080 Ti trace) yet launches the same kernels every turn, while a range that occurs
   twice per iteration alternates between periods with and without the forward pass.
3. The most frequent such name wins (gradient accumulation: the DataLoader's micro-batches,
   each one turn of the loop, as `prof.step()` is usually called); ties go to the loop's own
   markers (DataLoader `__next__`, then `Optimizer.step`, then `Optimizer.zero_grad`), then to
   the earliest.

Where the annotation sits in the iteration sets the step boundaries (`anchor`):

* `covers` — a name not listed below that lasts ≥ COVERING of its period (a
  `## train_step ##` around the body): each occurrence is a step, as a ProfilerStep is;
* `opens` — it starts each iteration (DataLoader `__next__`): step k runs from its start to
  the next one's; the last step runs until it has launched one iteration's work (the median
  count) and its thread's ops that started by then have ended;
* `closes` — it ends each iteration (`Optimizer.step`): step k runs from the previous
  one's end to its own; the first step starts with the thread's earliest op that ends after
  the first of the one iteration's work that precedes it.

Any other name opens when more work (GPU launches, else CPU ops) follows its last occurrence
than precedes the end of its first, and closes otherwise. N occurrences make N steps.

Cost (only for traces without ProfilerStep): one nesting pass over the CPU ops and
annotations, ~70 ms for the RTX 2080 Ti trace (75k events) and ~110 ms for the V100 DDP
trace with its ProfilerSteps removed (123k rows), medians of 5 on the loaded 2-core machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainprof import namematch
from trainprof.trace.kinds import GPU_WORK_KINDS, Kind, kind_mask
from trainprof.trace.links import Links
from trainprof.trace.nesting import group_ids, parents
from trainprof.trace.tables import Trace

MIN_REPEATS = 3  # two occurrences give one period: nothing to check its regularity against
WORK_BAND = (0.5, 2.0)  # a regular period holds this factor of the median period's work
REGULAR_SHARE = 0.75  # ... for at least this share of the periods
MIN_COVER = 0.5  # the iterations span at least half of the trace (not a burst inside it)
COVERING = 0.5  # median duration ≥ this × the period: the annotation is the iteration itself

OPENS = namematch.compile(r"^enumerate\(DataLoader\)#|DataLoaderIter\.__next__$")
CLOSES = namematch.compile(r"^Optimizer\.step#")
ZERO_GRAD = namematch.compile(r"^Optimizer\.zero_grad#")
PREFERENCE = (OPENS, CLOSES, ZERO_GRAD)  # tie-break among equally frequent names
ANCHORS = ("opens", "closes", "covers")


@dataclass(frozen=True, eq=False)
class Iteration:
    """The annotation that marks each iteration, its occurrences and where it sits in one."""

    name: str
    rows: np.ndarray  # int64: its occurrences on one thread, in time order
    anchor: str  # one of ANCHORS


def _nestable(trace: Trace) -> np.ndarray:
    return np.flatnonzero(kind_mask(trace.kind, (Kind.CPU_OP, Kind.USER_ANNOTATION)))


def _candidates(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(candidate rows, their thread group), top-level in the sense of the module docstring."""
    rows = _nestable(trace)
    if not len(rows):
        return rows, rows
    g = group_ids(trace.pid[rows], trace.tid[rows])
    par = parents(g, trace.ts_us[rows], trace.end_us[rows])
    key = trace.name_id[rows].astype(np.int64) * (int(g.max()) + 1) + g
    _, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    repeats = counts[inv] >= MIN_REPEATS
    names = trace.names
    ann = trace.kind[rows] == Kind.USER_ANNOTATION
    ops = np.flatnonzero(~ann)
    if len(ops):  # PyTorch 1.x filed the loop's ranges as ops; only those count among ops
        op_ids = np.unique(trace.name_id[rows[ops]])
        loop = np.array([any(p.search(names[i]) for p in PREFERENCE) for i in op_ids.tolist()], dtype=bool)
        ann[ops] = np.isin(trace.name_id[rows[ops]], op_ids[loop])
    cand = np.flatnonzero(ann & repeats)
    # walk up each candidate's ancestors: any repeating one makes it an inner range
    inner = np.zeros(len(cand), dtype=bool)
    cur = par[cand].copy()
    active = np.flatnonzero(cur >= 0)
    while len(active):
        inner[active] |= repeats[cur[active]]
        cur[active] = par[cur[active]]
        active = active[(cur[active] >= 0) & ~inner[active]]
    keep = cand[~inner]
    return rows[keep], g[keep]


def _trace_span(trace: Trace) -> float:
    real = trace.kind != Kind.OTHER  # the profiler's own "PyTorch Profiler (0)" span is not work
    if not real.any():
        return 0.0
    return float(trace.end_us[real].max() - trace.ts_us[real].min())


def work_times(trace: Trace, links: Links) -> np.ndarray:
    """Sorted times of the trace's units of work: GPU launches, else CPU op starts."""
    work = np.flatnonzero(kind_mask(trace.kind, GPU_WORK_KINDS))
    launch = links.launch[work]
    t = trace.ts_us[launch[launch >= 0]]
    if not len(t):
        t = trace.ts_us[trace.kind == Kind.CPU_OP]
    return np.sort(t)


def _per_period(starts: np.ndarray, work_t: np.ndarray) -> np.ndarray:
    """Units of work in each period [start_k, start_k+1)."""
    idx = np.searchsorted(starts, work_t, side="right") - 1
    idx = idx[(idx >= 0) & (idx < len(starts) - 1)]
    return np.bincount(idx, minlength=len(starts) - 1)


def _regular(starts: np.ndarray, work_t: np.ndarray) -> float | None:
    """The median period (µs) when the periods hold regular work (module docstring, 2), else None."""
    period = float(np.median(np.diff(starts)))
    count = _per_period(starts, work_t)
    med = float(np.median(count))
    if period <= 0 or med <= 0:
        return None
    lo, hi = WORK_BAND
    ok = (count >= lo * med) & (count <= hi * med)
    return period if ok.mean() >= REGULAR_SHARE else None


def _rank(name: str) -> int:
    return next((i for i, p in enumerate(PREFERENCE) if p.search(name)), len(PREFERENCE))


def find_iteration(trace: Trace, links: Links) -> Iteration | None:
    """The iteration annotation of a trace without ProfilerStep markers, or None."""
    rows, g = _candidates(trace)
    if not len(rows):
        return None
    span = _trace_span(trace)
    work_t = work_times(trace, links)
    key = trace.name_id[rows].astype(np.int64) * (int(g.max()) + 1) + g
    order = np.argsort(key, kind="stable")  # one sort, not a scan per name: rows stay ascending
    cuts = np.flatnonzero(np.diff(key[order])) + 1
    found = []
    for group in np.split(order, cuts):
        occ = rows[group]  # ascending rows: time order
        if len(occ) < MIN_REPEATS:
            continue
        starts = trace.ts_us[occ]
        period = _regular(starts, work_t)
        if period is None or starts[-1] - starts[0] + period < MIN_COVER * span:
            continue
        name = trace.name(int(occ[0]))
        found.append((-len(occ), _rank(name), float(starts[0]), name, occ, period))
    if not found:
        return None
    *_, name, occ, period = min(found, key=lambda f: f[:3])
    return Iteration(name, occ.astype(np.int64), _anchor(trace, work_t, name, occ, period))


def _anchor(trace: Trace, t: np.ndarray, name: str, occ: np.ndarray, period: float) -> str:
    if OPENS.search(name):  # a DataLoader wait can last most of a period; it never holds the step
        return "opens"
    if CLOSES.search(name):
        return "closes"
    if float(np.median(trace.dur_us[occ])) >= COVERING * period:
        return "covers"
    # Work after the last start vs before the first end: the loop body lies on one side.
    after = int((t >= trace.ts_us[occ[-1]]).sum())
    before = int((t <= trace.end_us[occ[0]]).sum())
    return "opens" if after >= before else "closes"


def iteration_bounds(trace: Trace, links: Links, it: Iteration) -> tuple[np.ndarray, np.ndarray]:
    """(CPU start, CPU end) of each step, µs, by the anchor rules of the module docstring.
    Every bound is the start or end of an event on the annotation's thread, so the
    dependency graph has a node at each."""
    s, e = trace.ts_us[it.rows], trace.end_us[it.rows]
    if it.anchor == "covers":
        return s.copy(), e.copy()
    own = _nestable(trace)
    r0 = int(it.rows[0])
    own = own[(trace.pid[own] == trace.pid[r0]) & (trace.tid[own] == trace.tid[r0])]
    os_, oe = trace.ts_us[own], trace.end_us[own]
    work_t = work_times(trace, links)
    k = max(1, int(np.median(_per_period(s, work_t))))  # one iteration's work
    if it.anchor == "opens":
        after = work_t[work_t >= s[-1]]
        upto = after[min(k, len(after)) - 1] if len(after) else e[-1]
        tail = oe[(os_ >= s[-1]) & (os_ <= upto)]
        return s.copy(), np.append(s[1:], max(float(e[-1]), float(tail.max()) if len(tail) else 0.0))
    before = work_t[work_t <= e[0]]
    since = before[-min(k, len(before))] if len(before) else s[0]
    head = os_[(oe >= since) & (os_ <= e[0])]
    first = min(float(s[0]), float(head.min()) if len(head) else float(s[0]))
    return np.insert(e[:-1], 0, first), e.copy()
