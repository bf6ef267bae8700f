"""The columnar trace: one numpy row per complete ("X") event, plus small side tables.

HTA's habit, kept: parse once into columns, then many small analysers work on arrays. Rows
are sorted by (ts_us, -dur_us), so on any one thread a parent comes before its children
and `np.searchsorted` works on `ts_us` directly.

Conventions: times are float64 microseconds (`*_us`), whatever unit the file used; ids that
a row lacks are -1; strings are interned (`name_id` indexes `names`). Every array is made
read-only, so a Trace can be shared between analysers without copying.

Memory is ~125 bytes per complete event (the 216k-event shared trace, 123k complete events,
takes 17.5 MB with its flows). Data only some rows have lives in side tables keyed by row: launch configuration and bytes (`gpu`), collective
parameters (`collectives`), flows, and the de-duplicated shape values (`arg_values`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Iterable

import numpy as np

from trainprof.trace.kinds import Kind, kind_mask


def _freeze(obj) -> None:
    for f in fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, np.ndarray):
            v.flags.writeable = False


@dataclass(frozen=True)
class Device:
    """The deviceProperties fields we chose; everything else in that block is never read."""

    id: int
    name: str
    total_memory_bytes: int | None = None
    compute_major: int | None = None
    compute_minor: int | None = None
    num_sms: int | None = None
    max_threads_per_block: int | None = None
    max_threads_per_sm: int | None = None
    warp_size: int | None = None
    arch: str | None = None  # ROCm gcnArchName ("gfx942:sramecc+:xnack-"); NVIDIA traces carry compute_major/minor


@dataclass(frozen=True)
class ProcessGroupInfo:
    """A process group this rank belongs to (distributedInfo.pg_config): its name (the
    `Process Group Name` collectives carry), what its description spells (the axis, e.g. `tp`
    for DeviceMesh's `mesh_tp`; `default_pg`; None: trace/process_groups.py) and its ranks."""

    name: str
    desc: str | None
    ranks: tuple[int, ...]


@dataclass(frozen=True)
class MeshInfo:
    """The layout trainprof's own parallel run recorded (workload/mesh.py): mesh dimensions
    outer to inner, the pipeline schedule, and which gloo worker thread serves which group."""

    dims: tuple[tuple[str, int], ...]
    schedule: str | None = None
    microbatches: int | None = None
    threads: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class TraceMeta:
    """Top-level facts about the trace, all from fields on the allow-list in schema.py."""

    device_name: str | None = None  # the GPU this rank's kernels ran on, None for CPU-only
    devices: tuple[Device, ...] = ()
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None  # "nccl", "gloo", ...
    time_unit: str = "us"  # unit of ts/dur in the FILE; columns are always microseconds
    display_time_unit: str | None = None  # viewer hint only; never a unit of ts (see reader.py)
    base_time_ns: int | None = None
    schema_version: int | str | None = None
    versions: tuple[tuple[str, str], ...] = ()  # ("cuda_runtime_version", "12040"), ...
    process_groups: tuple[ProcessGroupInfo, ...] = ()
    mesh: MeshInfo | None = None


@dataclass(frozen=True, eq=False)
class Flows:
    """Flow events (ph s/t/f). cat "ac2g" (current), "async_cpu_to_gpu" (2022) and
    "async_gpu" (legacy) link a runtime call (s) to its GPU activity (f); their id is the
    CUPTI correlation id. "fwdbwd" links a forward op to its backward."""

    id: np.ndarray  # int64
    phase: np.ndarray  # int8: 0 = s (start), 1 = t (step), 2 = f (finish)
    cat_id: np.ndarray  # int16 into Trace.categories
    pid: np.ndarray  # int64
    tid: np.ndarray  # int64
    ts_us: np.ndarray  # float64

    def __post_init__(self):
        _freeze(self)

    def __len__(self) -> int:
        return len(self.id)


@dataclass(frozen=True, eq=False)
class GpuDetail:
    """Per-activity args of kernels, memcpys and memsets, one row per such event."""

    row: np.ndarray  # int64, ascending: the event row each entry belongs to
    grid: np.ndarray  # int32 (m, 3); -1 where absent (ROCm traces carry no grid/block)
    block: np.ndarray  # int32 (m, 3)
    registers_per_thread: np.ndarray  # int32
    shared_memory_bytes: np.ndarray  # int64
    occupancy_pct: np.ndarray  # float32, NaN where absent
    bytes: np.ndarray  # int64, memcpy/memset size
    bandwidth_gbs: np.ndarray  # float32, as reported by CUPTI

    def __post_init__(self):
        _freeze(self)

    def __len__(self) -> int:
        return len(self.row)

    def index(self, rows) -> np.ndarray:
        """Position in this table of each event row, -1 where the row has no entry."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(self.row) == 0:
            return np.full(rows.shape, -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.row, rows), len(self.row) - 1)
        return np.where(self.row[pos] == rows, pos, -1)


@dataclass(frozen=True, eq=False)
class Collectives:
    """Events whose args name a collective (record_param_comms ops; NCCL kernels in newer traces)."""

    row: np.ndarray  # int64, ascending
    name: tuple[str, ...]  # "allreduce", "all_to_all", ...
    process_group: tuple[str | None, ...]
    dtype: tuple[str | None, ...]
    in_nelems: np.ndarray  # int64, -1 absent
    out_nelems: np.ndarray  # int64
    group_size: np.ndarray  # int64
    seq: np.ndarray  # int64: "Seq", the collective's number in its process group; -1 absent

    def __post_init__(self):
        _freeze(self)

    def __len__(self) -> int:
        return len(self.row)


@dataclass(frozen=True, eq=False)
class Trace:
    """One rank's trace as columns. Build it with `read_trace`; never mutate it."""

    path: str
    names: tuple[str, ...]
    categories: tuple[str, ...]
    # --- one entry per complete event ---
    name_id: np.ndarray  # int32
    cat_id: np.ndarray  # int16
    kind: np.ndarray  # int8, a Kind
    pid: np.ndarray  # int64; string pids that are not numbers get ids <= -2 (see lane_labels)
    tid: np.ndarray  # int64
    stream: np.ndarray  # int64: GPU rows: args.stream, else tid; other rows: args.stream or -1
    device: np.ndarray  # int16: args.device (GPU rows fall back to pid), -1 absent
    ts_us: np.ndarray  # float64
    dur_us: np.ndarray  # float64
    end_us: np.ndarray  # float64 = ts_us + dur_us
    correlation: np.ndarray  # int64, -1 absent: runtime call <-> GPU activity
    external_id: np.ndarray  # int64, -1 absent: cpu_op <-> runtime call <-> GPU activity
    python_id: np.ndarray  # int64, python_function rows
    python_parent_id: np.ndarray  # int64
    ev_idx: np.ndarray  # int64, Kineto's per-trace event index
    # Indices into `arg_values` (-1 absent) for record_shapes args.
    dims_id: np.ndarray  # int32, "Input Dims"
    types_id: np.ndarray  # int32, "Input type"
    strides_id: np.ndarray  # int32, "Input Strides"
    concrete_id: np.ndarray  # int32, "Concrete Inputs"
    arg_values: tuple[Any, ...]  # each distinct shape/type/value list once, as nested tuples
    # --- side tables ---
    flows: Flows
    gpu: GpuDetail
    collectives: Collectives
    meta: TraceMeta
    lane_labels: tuple[str, ...] = ()  # non-numeric pid/tid strings; id = -2 - index
    phase_counts: dict[str, int] = field(default_factory=dict)  # events per "ph", as read
    skip_reasons: dict[str, int] = field(default_factory=dict)  # malformed events, by reason
    notes: tuple[str, ...] = ()  # one-line warnings worth showing a user

    def __post_init__(self):
        _freeze(self)

    # The facts the rest of trainprof asks for most.
    @property
    def device_name(self) -> str | None:
        return self.meta.device_name

    @property
    def devices(self) -> tuple[Device, ...]:
        return self.meta.devices

    @property
    def rank(self) -> int | None:
        return self.meta.rank

    @property
    def world_size(self) -> int | None:
        return self.meta.world_size

    @property
    def time_unit(self) -> str:
        return self.meta.time_unit

    @property
    def skipped_events(self) -> int:
        return sum(self.skip_reasons.values())

    def __len__(self) -> int:
        return len(self.ts_us)

    def mask(self, *kinds: Kind) -> np.ndarray:
        return kind_mask(self.kind, kinds)

    def rows(self, *kinds: Kind) -> np.ndarray:
        """Row indices (ascending, so in time order) of the given kinds."""
        return np.flatnonzero(self.mask(*kinds))

    def name(self, row: int) -> str:
        return self.names[self.name_id[row]]

    def names_of(self, rows: Iterable[int]) -> list[str]:
        names = self.names
        return [names[i] for i in self.name_id[np.asarray(rows, dtype=np.int64)]]

    def name_ids(self, *names: str) -> np.ndarray:
        """Ids of the given names that occur in this trace (absent names are left out)."""
        index = {n: i for i, n in enumerate(self.names)}
        return np.array([index[n] for n in names if n in index], dtype=np.int32)

    def arg(self, column: np.ndarray, row: int) -> Any:
        """The decoded value of a shape column (dims_id, types_id, ...) at `row`, or None."""
        i = int(column[row])
        return None if i < 0 else self.arg_values[i]

    def __repr__(self) -> str:
        counts = np.bincount(self.kind, minlength=len(Kind)) if len(self) else np.zeros(len(Kind), int)
        parts = ", ".join(f"{k.name.lower()}={counts[k]}" for k in Kind if counts[k])
        return (f"Trace({self.path!r}, events={len(self)}, {parts}, device={self.device_name!r}, "
                f"rank={self.rank}, skipped={self.skipped_events})")
