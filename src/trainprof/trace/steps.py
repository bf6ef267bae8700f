"""Training steps: ProfilerStep#N intervals on the CPU and the GPU time they caused.

`torch.profiler.profile.step()` wraps each step in a RecordFunction named "ProfilerStep#N"
(category user_annotation now, cpu_op in PyTorch 1.x). That is the CPU side. The GPU side
of step N is the span of the GPU work *launched* inside it: kernels run late, so a step's
GPU extent usually starts after and ends after its CPU interval, and using the CPU interval
for GPU time would bill step N's tail kernels to step N+1.

Traces without ProfilerStep markers (a profiler driven without .step(): the shared RTX 2080
Ti DataLoader trace, HTA's step_based_trace) take their steps from the annotation that repeats
once per iteration (`enumerate(DataLoader)#…__next__`, `Optimizer.step#…`, a user range:
trace/iterations.py), numbered 0, 1, … in time order. With neither (an inference trace, a
one-shot benchmark), one pseudo-step spans the whole trace, so analyses that walk steps have
one; the record then says 0 steps and shows no per-step figure (docs/trace-analysis.md).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from trainprof.trace.iterations import Iteration, find_iteration, iteration_bounds
from trainprof.trace.kinds import GPU_WORK_KINDS, STEP_PREFIX, Kind, kind_mask
from trainprof.trace.links import Links
from trainprof.trace.tables import Trace


@dataclass(frozen=True, eq=False)
class Steps:
    """One entry per step, in time order."""

    number: np.ndarray  # int64: N of ProfilerStep#N, the ordinal 0.. of an annotation's; -1: pseudo-step
    row: np.ndarray  # int64: the ProfilerStep (annotation) event's row; -1 for the pseudo-step
    cpu_start_us: np.ndarray  # float64
    cpu_end_us: np.ndarray
    gpu_start_us: np.ndarray  # float64, NaN when the step launched no GPU work
    gpu_end_us: np.ndarray
    n_gpu_events: np.ndarray  # int64: kernels + memcpys + memsets launched in the step
    pseudo: bool  # True when the trace had neither ProfilerStep markers nor an iteration annotation
    source: str = "ProfilerStep"  # the marker: "ProfilerStep", an annotation's name, "" (pseudo-step)
    anchor: str = "range"  # "range" (each marker is a step), "opens"/"closes" (iterations.py), "" (pseudo)

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                v.flags.writeable = False

    def __len__(self) -> int:
        return len(self.number)

    @property
    def described(self) -> str:
        """Where the steps came from, in words (the record's `steps_from`)."""
        if self.pseudo:
            return ""
        if self.source == "ProfilerStep":
            return "ProfilerStep"
        where = {"opens": "each starts one", "closes": "each ends one"}.get(self.anchor, "each spans one")
        return f"{self.source} ({where}; no ProfilerStep)"

    @property
    def cpu_dur_us(self) -> np.ndarray:
        return self.cpu_end_us - self.cpu_start_us

    @property
    def gpu_dur_us(self) -> np.ndarray:
        return self.gpu_end_us - self.gpu_start_us


def _step_number(name: str) -> int:
    """N of "ProfilerStep#N"; -1 when N is not a number an int64 holds (#45: a 40-digit N was
    an OverflowError traceback)."""
    try:
        n = int(name[len(STEP_PREFIX):].split()[0])
    except (ValueError, IndexError):
        return -1
    return n if -(1 << 63) <= n < (1 << 63) else -1


def find_steps(trace: Trace, links: Links) -> Steps:
    """The trace's steps with their CPU intervals and GPU extents: ProfilerStep ranges, else
    the iteration annotation's periods, else one pseudo-step."""
    rows = trace.rows(Kind.PROFILER_STEP)
    if len(rows) == 0:
        it = find_iteration(trace, links)
        if it is not None:
            return _annotation_steps(trace, links, it)
        return _pseudo_step(trace, np.flatnonzero(kind_mask(trace.kind, GPU_WORK_KINDS)))

    # One entry per step number; a duplicate (rare: nested profilers) keeps the longest.
    numbers = np.array([_step_number(n) for n in trace.names_of(rows)], dtype=np.int64)
    order = np.lexsort((-trace.dur_us[rows], numbers))
    first = np.ones(len(order), dtype=bool)
    first[1:] = numbers[order][1:] != numbers[order][:-1]
    keep = order[first]
    keep = keep[np.argsort(trace.ts_us[rows[keep]], kind="stable")]
    rows, numbers = rows[keep], numbers[keep]
    start, end = trace.ts_us[rows], trace.end_us[rows]
    work, step = _launched_in(trace, links, start, end)
    return Steps(number=numbers, row=rows.astype(np.int64), cpu_start_us=start, cpu_end_us=end,
                 **_extents(trace, work, step, len(rows)), pseudo=False)


def _annotation_steps(trace: Trace, links: Links, it: Iteration) -> Steps:
    start, end = iteration_bounds(trace, links, it)
    work, step = _launched_in(trace, links, start, end)
    return Steps(number=np.arange(len(start), dtype=np.int64), row=it.rows.copy(), cpu_start_us=start,
                 cpu_end_us=end, **_extents(trace, work, step, len(start)), pseudo=False, source=it.name,
                 anchor="range" if it.anchor == "covers" else it.anchor)


def _launched_in(trace: Trace, links: Links, start: np.ndarray, end: np.ndarray):
    """(GPU work rows, step index): the step whose CPU interval holds each one's launch.
    Steps are sequential on the training thread; the launch may come from any thread (the
    autograd engine launches backward kernels from its own)."""
    work = np.flatnonzero(kind_mask(trace.kind, GPU_WORK_KINDS))
    launch = links.launch[work]
    work, launch = work[launch >= 0], launch[launch >= 0]
    t = trace.ts_us[launch]
    step = np.searchsorted(start, t, side="right") - 1
    inside = (step >= 0) & (t <= end[np.maximum(step, 0)])
    return work[inside], step[inside]


def _extents(trace: Trace, work: np.ndarray, step: np.ndarray, n: int) -> dict[str, np.ndarray]:
    gpu_start = np.full(n, np.inf)
    gpu_end = np.full(n, -np.inf)
    np.minimum.at(gpu_start, step, trace.ts_us[work])
    np.maximum.at(gpu_end, step, trace.end_us[work])
    count = np.bincount(step, minlength=n).astype(np.int64)
    none = count == 0
    gpu_start[none] = np.nan
    gpu_end[none] = np.nan
    return {"gpu_start_us": gpu_start, "gpu_end_us": gpu_end, "n_gpu_events": count}


def _pseudo_step(trace: Trace, work: np.ndarray) -> Steps:
    """The whole trace as one step; its GPU extent counts all GPU work, linked or not."""
    if len(trace):
        # The profiler's own span ("PyTorch Profiler (0)", category Trace) is not work.
        real = trace.kind != Kind.OTHER
        pool = real if real.any() else np.ones(len(trace), dtype=bool)
        cpu_start, cpu_end = float(trace.ts_us[pool].min()), float(trace.end_us[pool].max())
    else:
        cpu_start = cpu_end = 0.0
    ext = _extents(trace, work, np.zeros(len(work), dtype=np.int64), 1)
    return Steps(number=np.array([-1], dtype=np.int64), row=np.array([-1], dtype=np.int64),
                 cpu_start_us=np.array([cpu_start]), cpu_end_us=np.array([cpu_end]), **ext, pseudo=True,
                 source="", anchor="")


def step_of(trace: Trace, links: Links, steps: Steps) -> np.ndarray:
    """Row-aligned step index (into `steps`) of each GPU activity, by its launch; -1 otherwise."""
    out = np.full(len(trace), -1, dtype=np.int64)
    if steps.pseudo:
        out[kind_mask(trace.kind, GPU_WORK_KINDS)] = 0
        return out
    work, step = _launched_in(trace, links, steps.cpu_start_us, steps.cpu_end_us)
    out[work] = step
    return out
