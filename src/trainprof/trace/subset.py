"""A Trace restricted to some rows (e.g. one profiler step), side tables re-indexed.

Analysers then run unchanged on the subset: `trainprof analyze --step N`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from trainprof.trace.kinds import GPU_WORK_KINDS, Kind, kind_mask
from trainprof.trace.links import Links
from trainprof.trace.steps import Steps, step_of
from trainprof.trace.tables import Collectives, Flows, GpuDetail, Trace

ROW_FIELDS = ("name_id", "cat_id", "kind", "pid", "tid", "stream", "device", "ts_us", "dur_us", "end_us",
              "correlation", "external_id", "python_id", "python_parent_id", "ev_idx", "dims_id", "types_id",
              "strides_id", "concrete_id")


def _side(table, keep: np.ndarray, new_index: np.ndarray):  # noqa: ANN001
    sel = keep[table.row] if len(table.row) else np.zeros(0, dtype=bool)
    out = {}
    for f in dataclasses.fields(table):
        v = getattr(table, f.name)
        if f.name == "row":
            out["row"] = new_index[v[sel]]
        elif isinstance(v, np.ndarray):
            out[f.name] = v[sel]
        else:  # tuples of per-entry values
            out[f.name] = tuple(x for x, s in zip(v, sel) if s)
    return type(table)(**out)


def subset(trace: Trace, keep: np.ndarray, note: str | None = None) -> Trace:
    """The rows where `keep` is True, in their original order."""
    rows = np.flatnonzero(keep)
    new_index = np.full(len(trace), -1, dtype=np.int64)
    new_index[rows] = np.arange(len(rows))
    cols = {f: getattr(trace, f)[rows] for f in ROW_FIELDS}
    fl = trace.flows
    if len(rows) and len(fl):
        lo, hi = trace.ts_us[rows].min(), trace.end_us[rows].max()
        fsel = (fl.ts_us >= lo) & (fl.ts_us <= hi)
    else:
        fsel = np.zeros(len(fl), dtype=bool)
    flows = Flows(**{f.name: getattr(fl, f.name)[fsel] for f in dataclasses.fields(Flows)})
    return dataclasses.replace(
        trace, **cols, flows=flows,
        gpu=_side(trace.gpu, keep, new_index) if isinstance(trace.gpu, GpuDetail) else trace.gpu,
        collectives=_side(trace.collectives, keep, new_index) if isinstance(trace.collectives, Collectives)
        else trace.collectives,
        notes=trace.notes + ((note,) if note else ()),
    )


def step_subset(trace: Trace, links: Links, steps: Steps, number: int) -> Trace:
    """One profiler step: host rows inside its CPU interval, GPU work it launched, and GPU
    markers inside its GPU extent."""
    idx = np.flatnonzero(steps.number == number)
    if steps.pseudo or not len(idx):
        from trainprof.errors import UsageError

        have = "no ProfilerStep markers" if steps.pseudo else "steps " + ", ".join(map(str, steps.number.tolist()))
        raise UsageError(f"--step {number}: {trace.path} has {have}")
    i = int(idx[0])
    lo, hi = steps.cpu_start_us[i], steps.cpu_end_us[i]
    work = kind_mask(trace.kind, GPU_WORK_KINDS)
    gpu_marks = kind_mask(trace.kind, (Kind.GPU_SYNC, Kind.GPU_USER_ANNOTATION))
    keep = ~work & ~gpu_marks & (trace.ts_us >= lo) & (trace.ts_us <= hi)
    keep |= work & (step_of(trace, links, steps) == i)
    g0, g1 = steps.gpu_start_us[i], steps.gpu_end_us[i]
    if not np.isnan(g0):
        keep |= gpu_marks & (trace.ts_us >= g0) & (trace.end_us <= g1)
    what = (f"ProfilerStep#{number}" if steps.source == "ProfilerStep"
            else f"step {number} of the {steps.source} iterations (the whole subset is that one step)")
    return subset(trace, keep, note=f"restricted to {what}")
