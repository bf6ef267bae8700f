"""The dependency graph's vocabulary (depgraph.py builds it, the walks read it): segment kinds,
edge types, the CPU event kinds that make a thread's chain, and the edge columns as the
builders collect them."""

from __future__ import annotations

import numpy as np

from trainprof.trace import Kind

# Segment kinds: what a piece of the critical path is (analysis.json vocabulary).
SEG_KINDS = ("cpu_op", "kernel", "launch_overhead", "sync_wait", "communication", "data_loading", "idle", "allocator")
CPU_OP, KERNEL, LAUNCH, SYNC, COMM, DATA, IDLE, ALLOC = range(len(SEG_KINDS))
# Edge types (at most 8: critical_path's name keys hold the type in 3 bits).
E_CPU, E_GPU, E_LAUNCH, E_STREAM, E_SYNC, E_WAIT, E_WAKE, E_JOIN = range(8)
EDGE_TYPES = ("cpu", "gpu", "launch", "stream", "sync", "wait_event", "wake", "join")

CPU_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.PROFILER_STEP, Kind.RUNTIME, Kind.DRIVER)
_COLUMNS = (("src", np.int64), ("dst", np.int64), ("etype", np.int8), ("seg", np.int8), ("row", np.int64),
            ("w", np.float64))


class Edges:
    """Edge columns added kind by kind (each builder adds its own), joined once in the order
    they were added: that order is the edge numbering, so it is part of the graph."""

    def __init__(self) -> None:
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k, _ in _COLUMNS}

    def add(self, src, dst, etype: int, seg, row, w) -> None:
        """Edges src → dst of one type; seg, row and w are one value each or one per edge."""
        n = len(src)
        p = self.parts
        p["src"].append(np.asarray(src, np.int64))
        p["dst"].append(np.asarray(dst, np.int64))
        p["etype"].append(np.full(n, etype, np.int8))
        p["seg"].append(np.broadcast_to(np.asarray(seg, np.int8), (n,)).copy())
        p["row"].append(np.broadcast_to(np.asarray(row, np.int64), (n,)).copy())
        p["w"].append(np.broadcast_to(np.asarray(w, np.float64), (n,)).copy())

    def columns(self) -> dict[str, np.ndarray]:
        """The joined columns (the pieces are dropped as each column is joined)."""
        out = {}
        for k, dtype in _COLUMNS:
            parts = self.parts.pop(k)
            out[k] = np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)
        return out
