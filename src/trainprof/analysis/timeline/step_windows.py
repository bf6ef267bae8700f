"""Each step's window, one definition for the breakdown's per-step rows, the step means, the
critical path and the what-if (issue #39 item 2).

* **A step that owns GPU work** (a GPU trace) is the span of that work: it ends at the end of
  the latest activity it owns and starts where the previous step ended, so the windows
  partition the device timeline, (end_{i−1}, end_i]; the first step starts at its first
  activity. A step owns the work launched inside its CPU range (trace/steps.py) and the work
  the trace cannot tie to a launch inside a step whose start falls in its window
  (`step_work`; for the first step, from its first launched activity on). A step whose own work all ended before the previous step's did has an empty
  window (end_i = end_{i−1}): periods never go back.
* **A step that owns none** (a CPU-only trace; a GPU trace's profiler stop) is its CPU range,
  from the end of the previous window when that lies inside the range.

The CPU's run-ahead into the first step — from its ProfilerStep's start to its first
activity — is not GPU time of the step: it is `first_step_cpu_lead_us`, shown apart and in no
step time, step mean, critical path or what-if "measured" figure. Before issue #39 the
critical path and the what-if started the first step at its CPU start, so a 59.5 ms GPU step
read 121.6 ms.

`partition` is the rule on (start, end) per step; `step_windows` applies it to times, and
analysis/graph/path_steps.windows to graph nodes (so a what-if re-times the same windows).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from trainprof.analysis.timeline.context import Context

_OWNED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Windows:
    """Per step (ctx.steps order): its window and whether it is a GPU window."""

    start_us: np.ndarray
    end_us: np.ndarray
    gpu: np.ndarray  # bool: the window is the span of the step's GPU work
    first_step_cpu_lead_us: float | None  # the first step's CPU start → its first activity (GPU traces)


def step_work(ctx: Context) -> list[np.ndarray]:
    """Per step (ctx.steps order), the GPU work rows it owns, in row order. The pseudo-step
    owns every row. Computed once per context (every what-if scenario asks: 4 ms each on
    the 216k-event DDP trace)."""
    out = _OWNED.get(ctx)
    if out is None:
        out = _OWNED[ctx] = _step_work(ctx)
    return out


def _step_work(ctx: Context) -> list[np.ndarray]:
    t = ctx.trace
    s = ctx.steps
    work = ctx.work
    if s.pseudo or not len(s):
        return [work] if len(s) else []
    from trainprof.trace.steps import step_of

    owner = step_of(t, ctx.links, s)[work]
    # where untied work goes: the window (end_{i−1}, end_i] with end_i the later of the step's
    # CPU range end and its launched work's end (a trace with no links at all still has steps)
    end = np.array(s.cpu_end_us, dtype=float)
    if len(work):
        np.maximum.at(end, owner[owner >= 0], t.end_us[work[owner >= 0]])
    end = np.maximum.accumulate(end)
    free = np.flatnonzero(owner < 0)
    if len(free):
        # untied work before the first step's first launched activity is not the first step's:
        # where the host entered that step is no GPU time (its run-ahead is apart), so the
        # first window starts at launched work (the CPU start only for a step launching none)
        tied0 = work[owner == 0]
        lo = float(t.ts_us[tied0].min()) if len(tied0) else float(s.cpu_start_us[0])
        i = np.searchsorted(end, t.ts_us[work[free]], side="left")
        inside = (i < len(s)) & (t.ts_us[work[free]] >= lo)
        owner = owner.copy()
        owner[free[inside]] = i[inside]
    # work rows grouped by step once (a stable sort keeps each group ascending), not one scan
    # of all work per step: O(steps × work) was 0.9 s of a 4.5M-event trace's what-ifs
    by_step = np.argsort(owner, kind="stable")
    cut = np.searchsorted(owner[by_step], np.arange(len(s) + 1), side="left")
    return [work[by_step[cut[i]:cut[i + 1]]] for i in range(len(s))]


def partition(start: np.ndarray, end: np.ndarray, gpu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rule (module docstring) on each step's own start and end: (lo_of, end_of) per step.
    lo_of[i] = −1: the window starts at step i's own start; j ≥ 0: at the window end of step j.
    end_of[i] = k: the window ends at step k's own end (k < i: an empty GPU window)."""
    n = len(start)
    lo_of = np.full(n, -1, dtype=np.int64)
    end_of = np.arange(n, dtype=np.int64)
    for i in range(1, n):
        prev = end[end_of[i - 1]]
        if gpu[i]:
            lo_of[i] = i - 1
            if prev >= end[i]:
                end_of[i] = end_of[i - 1]
        elif start[i] < prev < end[i]:
            lo_of[i] = i - 1
    return lo_of, end_of


def step_windows(ctx: Context) -> Windows:
    """Each step's window in trace µs (module docstring); the pseudo-step's is the span of all
    GPU work, or the whole trace without any."""
    s = ctx.steps
    owned = step_work(ctx)
    t = ctx.trace
    gpu = np.array([len(w) > 0 for w in owned], dtype=bool) if ctx.has_gpu else np.zeros(len(s), dtype=bool)
    own_start = np.array(s.cpu_start_us, dtype=float)
    own_end = np.array(s.cpu_end_us, dtype=float)
    for i in np.flatnonzero(gpu):
        own_start[i] = float(t.ts_us[owned[i]].min())
        own_end[i] = float(t.end_us[owned[i]].max())
    lo_of, end_of = partition(own_start, own_end, gpu)
    end = own_end[end_of]
    start = np.where(lo_of < 0, own_start, end[np.maximum(lo_of, 0)])
    lead = None
    if len(s) and gpu[0] and not s.pseudo:
        lead = max(0.0, float(own_start[0] - s.cpu_start_us[0]))
    return Windows(start_us=start, end_us=end, gpu=gpu, first_step_cpu_lead_us=lead)
