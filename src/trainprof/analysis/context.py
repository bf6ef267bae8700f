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

# Classes that are not "compute" in HTA's temporal breakdown.
NON_COMPUTE = ("communication", "memcpy", "memset")


@dataclass(frozen=True, eq=False)
class Context:
    trace: Trace
    links: Links
    steps: Steps
    classes: RowClasses

    @classmethod
    def build(cls, trace: Trace) -> "Context":
        links = link(trace)
        return cls(trace, links, find_steps(trace, links),
                   classify_rows(trace.names, trace.name_id, trace.kind))

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

    @property
    def has_gpu(self) -> bool:
        return len(self.work) > 0

    def spans(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.trace.ts_us[rows], self.trace.end_us[rows]

    def class_name(self, row: int) -> str:
        cid = int(self.classes.class_id[row])
        return self.classes.names[cid] if cid >= 0 else "cpu"
