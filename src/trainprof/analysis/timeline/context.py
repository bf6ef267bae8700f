"""Everything the trace analysers share, derived once per rank: links, steps, kernel classes.

Analysers are pure functions `f(ctx, ...) -> dict`; building the context is the only step
that walks all rows, so adding an analyser costs only its own work.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from trainprof.trace import Kind, Links, Steps, Trace, find_steps, link
from trainprof.trace.classify import RowClasses, classify_rows
from trainprof.trace.kinds import GPU_WORK_KINDS, kind_mask
from trainprof.trace.tensor_core import triton_tensor_core
from trainprof.vocab import parts

# Classes that are not "compute" in HTA's temporal breakdown: each is a part of its own (vocab/parts.py).
NON_COMPUTE = (parts.COMMUNICATION, parts.MEMCPY, parts.MEMSET)


@dataclass(frozen=True, eq=False)
class Context:
    trace: Trace
    links: Links
    steps: Steps
    classes: RowClasses

    @classmethod
    def build(cls, trace: Trace) -> "Context":
        links = link(trace)
        # names first (trace/classify.py), then what only the trace shows: Triton kernels
        # under a matmul op with 16-bit operands run on Tensor Cores (trace/tensor_core.py)
        classes = triton_tensor_core(trace, links, classify_rows(trace.names, trace.name_id, trace.kind))
        return cls(trace, links, find_steps(trace, links), classes)

    # ---- row sets (ascending row indices) ---------------------------------------
    @cached_property
    def work(self) -> np.ndarray:
        """GPU activity rows: kernels, memcpys, memsets (what occupies the device)."""
        return np.flatnonzero(kind_mask(self.trace.kind, GPU_WORK_KINDS))

    def class_rows(self, *names: str) -> np.ndarray:
        ids = [self.classes.names.index(n) for n in names]
        return self.work[np.isin(self.classes.class_id[self.work], ids)]

    @cached_property
    def compute(self) -> np.ndarray:
        ids = [i for i, n in enumerate(self.classes.names) if n not in NON_COMPUTE]
        return self.work[np.isin(self.classes.class_id[self.work], ids)]

    @cached_property
    def kernels(self) -> np.ndarray:
        return self.work[self.trace.kind[self.work] == Kind.KERNEL]

    @cached_property
    def _gpu_rows(self) -> np.ndarray:
        """Every row that occupies the device's timeline: GPU work plus Kineto's `cuda_sync`
        stream-wait markers (HTA keeps every event with a stream; those markers count as
        non-compute there, `sync` here). "Event Sync"/"Context Sync" markers carry no stream
        (HTA leaves them out too); "Stream Sync" belongs to a stream."""
        t = self.trace
        rows = np.flatnonzero(t.mask(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_SYNC))
        no_stream = np.isin(t.name_id[rows], t.name_ids("Event Sync", "Context Sync"))
        return rows[~no_stream]

    @cached_property
    def timeline_hta(self) -> np.ndarray:
        """GPU rows as HTA selects them (hta/common/trace.py `_filter_irrelevant_gpu_kernels`):
        with two or more ProfilerStep names, only activity *launched* before the last step
        began (the last step is usually cut short when the profiler stops); activity whose
        launch the trace lacks is dropped. They set the breakdown's window, and the
        cross-check against HTA (`temporal_breakdown(ctx, hta=True)`) uses them alone."""
        t = self.trace
        rows = self._gpu_rows
        step_rows = np.flatnonzero(np.isin(t.name_id, [i for i, n in enumerate(t.names)
                                                       if "ProfilerStep" in n]))
        if len(set(t.name_id[step_rows].tolist())) < 2:
            return rows
        last = float(t.ts_us[step_rows].max())
        launch = self.links.launch[rows]
        keep = (launch >= 0) & (t.ts_us[np.maximum(launch, 0)] < last)
        return rows[keep]

    @cached_property
    def window(self) -> tuple[float, float]:
        """The whole-trace breakdown's window: from the first to the last end of HTA's rows."""
        rows = self.timeline_hta
        if not len(rows):
            return 0.0, 0.0
        s, e = self.spans(rows)
        return float(s.min()), float(e.max())

    @cached_property
    def timeline(self) -> np.ndarray:
        """GPU rows of the whole-trace breakdown: every row that runs inside the window
        (`window`, set by HTA's selection), HTA's rows included. HTA also drops the work
        whose launch the trace lacks, or that was launched after the last step began, even
        where it runs inside the window, and then calls that time idle: on the shipped
        A100 test trace 559 such kernels, 67.3 ms, 25.1 ms of it in the gaps of the rest.
        A kernel that runs is not idle time; the breakdown keeps HTA's window and idle as
        HTA counts it (`hta_idle_us`) for comparison (docs/trace-analysis.md)."""
        rows = self._gpu_rows
        if len(rows) == len(self.timeline_hta):
            return rows
        lo, hi = self.window
        s, e = self.spans(rows)
        return rows[(e > lo) & (s < hi)]

    def timeline_parts(self, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        """`rows` split as the breakdown's parts: compute, communication, memcpy, memset, sync."""
        cid, names, kind = self.classes.class_id[rows], self.classes.names, self.trace.kind[rows]
        compute = np.isin(cid, [i for i, n in enumerate(names) if n not in NON_COMPUTE])
        return (rows[compute], *(rows[cid == names.index(n)] for n in NON_COMPUTE), rows[kind == Kind.GPU_SYNC])

    @property
    def has_gpu(self) -> bool:
        return len(self.work) > 0

    def spans(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.trace.ts_us[rows], self.trace.end_us[rows]

    def class_name(self, row: int) -> str:
        cid = int(self.classes.class_id[row])
        return self.classes.names[cid] if cid >= 0 else "cpu"
