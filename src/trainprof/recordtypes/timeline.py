"""The per-trace timeline blocks of a rank in analysis.json, as analysis/timeline/ returns them:
per-step rows, the temporal and idle breakdowns, top operators and kernels, kernel classes,
communication, launch, memcpy, optimizer and attention. Each block's formulas are in the
analyser named in its docstring.

Every field that has a default is UNSET when absent, so a record encodes to exactly the keys
its analyser wrote (a CPU trace's per-step rows carry no GPU columns; an older record lacks
newer fields) and nothing is added on the way; the exception is the idle breakdown's totals
and lists, which default to 0 and [] (analysis/timeline/idle.py writes them on every trace,
so the rules read them without a test for absence).
"""

from __future__ import annotations

from typing import Any, Optional, Union

import msgspec
from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import Num, Part
from trainprof.recordtypes.roofline import OpRoofline
from trainprof.vocab.collectives import read_name


class StepRow(Part, kw_only=True):
    """One profiler step's GPU timeline, partitioned at each step's end (analysis/timeline/temporal.py)."""

    step: Union[Optional[int], UnsetType] = UNSET
    cpu_us: Union[Optional[Num], UnsetType] = UNSET
    span_us: Union[Optional[Num], UnsetType] = UNSET
    compute_us: Union[Num, UnsetType] = UNSET
    communication_us: Union[Num, UnsetType] = UNSET
    memcpy_us: Union[Num, UnsetType] = UNSET
    memset_us: Union[Num, UnsetType] = UNSET
    sync_us: Union[Num, UnsetType] = UNSET
    idle_us: Union[Num, UnsetType] = UNSET
    compute_pct: Union[Optional[Num], UnsetType] = UNSET
    communication_pct: Union[Optional[Num], UnsetType] = UNSET
    memcpy_pct: Union[Optional[Num], UnsetType] = UNSET
    memset_pct: Union[Optional[Num], UnsetType] = UNSET
    sync_pct: Union[Optional[Num], UnsetType] = UNSET
    idle_pct: Union[Optional[Num], UnsetType] = UNSET
    gpu_events: Union[Optional[int], UnsetType] = UNSET


class Temporal(Part, kw_only=True):
    """HTA's temporal breakdown over the whole trace's window (analysis/timeline/temporal.py)."""

    span_us: Union[Num, UnsetType] = UNSET
    compute_us: Union[Num, UnsetType] = UNSET
    communication_us: Union[Num, UnsetType] = UNSET
    memcpy_us: Union[Num, UnsetType] = UNSET
    memset_us: Union[Num, UnsetType] = UNSET
    sync_us: Union[Num, UnsetType] = UNSET
    idle_us: Union[Num, UnsetType] = UNSET
    compute_pct: Union[Optional[Num], UnsetType] = UNSET
    communication_pct: Union[Optional[Num], UnsetType] = UNSET
    memcpy_pct: Union[Optional[Num], UnsetType] = UNSET
    memset_pct: Union[Optional[Num], UnsetType] = UNSET
    sync_pct: Union[Optional[Num], UnsetType] = UNSET
    idle_pct: Union[Optional[Num], UnsetType] = UNSET
    hta_idle_us: Union[Num, UnsetType] = UNSET
    """the idle time HTA reports over the same window: it also counts as idle the GPU work its
    selection drops (launch absent from the trace, or after the last step began)"""
    hta_idle_pct: Union[Optional[Num], UnsetType] = UNSET


class OpRow(Part, kw_only=True):
    """A top operator (analysis/timeline/ops.py): GPU time of the kernels it launched, or its CPU time."""

    name: str
    metric: Union[Optional[str], UnsetType] = UNSET
    """gpu | self_cpu: what total_us measures"""
    calls: Union[Optional[int], UnsetType] = UNSET
    kernels: Union[Optional[int], UnsetType] = UNSET
    total_us: Union[Num, UnsetType] = UNSET
    mean_us: Union[Optional[Num], UnsetType] = UNSET
    share_pct: Union[Optional[Num], UnsetType] = UNSET
    roofline: Union[Optional[OpRoofline], UnsetType] = UNSET
    """the first rows' place on the roofline (UNSET in records written before it)"""


class KernelRow(Part, kw_only=True):
    name: str
    kind: Union[Optional[str], UnsetType] = msgspec.field(default=UNSET, name="class")
    """the kernel class (trace/ classification tables); "class" in the file"""
    tensor_core: Union[Optional[bool], UnsetType] = UNSET
    count: Union[Optional[int], UnsetType] = UNSET
    total_us: Union[Num, UnsetType] = UNSET
    mean_us: Union[Optional[Num], UnsetType] = UNSET
    share_pct: Union[Optional[Num], UnsetType] = UNSET


class ClassRow(Part, kw_only=True):
    kind: str = msgspec.field(name="class")
    total_us: Union[Num, UnsetType] = UNSET
    share_pct: Union[Optional[Num], UnsetType] = UNSET


class KernelClasses(Part, kw_only=True):
    """GPU time per kernel class and the Tensor Core share of compute (analysis/timeline/ops.py
    class_breakdown); a rank's record keeps its parts as kernel_classes, tensor_core_pct,
    matmul_us and matmul_tensor_core_us."""

    matmul_us: Num
    """GEMM + convolution + attention kernels"""
    matmul_tensor_core_us: Num
    classes: list[ClassRow]
    tensor_core_us: Num
    tensor_core_pct: Optional[Num]
    """of compute-kernel time; None without compute kernels"""


class Latency(Part, kw_only=True):
    count: int = 0
    mean_us: Union[Optional[Num], UnsetType] = UNSET
    p50_us: Union[Optional[Num], UnsetType] = UNSET
    p95_us: Union[Optional[Num], UnsetType] = UNSET


class LaunchStats(Part, kw_only=True):
    """Host launch cost and launch-to-start delay (analysis/timeline/launch.py)."""

    linked_pct: Union[Optional[Num], UnsetType] = UNSET
    """kernels linked to the CPU call that launched them"""
    cpu_launch: Union[Latency, UnsetType] = UNSET
    launch_to_start: Union[Latency, UnsetType] = UNSET
    kernels: Union[int, UnsetType] = UNSET
    kernels_per_step: Union[Num, UnsetType] = UNSET
    short_kernel_threshold_us: Union[Num, UnsetType] = UNSET
    short_kernel_count_pct: Union[Num, UnsetType] = UNSET
    short_kernel_time_pct: Union[Num, UnsetType] = UNSET


class CopyKind(Part, kw_only=True):
    """Copies of one direction and host memory kind ("HtoD Pageable->Device")."""

    count: int = 0
    total_us: Num = 0.0


class Memcpy(Part, kw_only=True):
    """Copies, and the pageable ones a pinned buffer would speed up (analysis/timeline/host_work.py)."""

    count: int = 0
    total_us: Num = 0.0
    pageable_us: Num = 0.0
    pageable_count: int = 0
    by_kind: dict[str, CopyKind] = {}


class Optimizer(Part, kw_only=True):
    """optimizer.step() work (analysis/timeline/host_work.py); only `steps` when none was seen."""

    steps: int = 0
    classes: Union[list[str], UnsetType] = UNSET
    cpu_us: Union[Num, UnsetType] = UNSET
    kernels: Union[int, UnsetType] = UNSET
    gpu_us: Union[Num, UnsetType] = UNSET
    kernels_per_step: Union[Num, UnsetType] = UNSET
    phase_us: Union[Num, UnsetType] = UNSET
    """the optimizer phase on the GPU: per Optimizer.step range, its first work's start to its
    last work's end, summed; split below into parts that add up to it (host_work.phase_split)"""
    compute_us: Union[Num, UnsetType] = UNSET
    communication_us: Union[Num, UnsetType] = UNSET
    """communication in the phase not under compute"""
    copy_us: Union[Num, UnsetType] = UNSET
    idle_us: Union[Num, UnsetType] = UNSET


class TinyGroup(Part, kw_only=True):
    """One call site of tiny cast/copy/fill kernels."""

    kind: str
    """cast/copy | fill"""
    op: Optional[str] = None
    """the op that launched them with its callers, outermost first; None: launch not linked"""
    python: Optional[str] = None
    """the user's line (with_stack traces)"""
    count: int
    per_step: Num
    total_us: Num


class TinyKernels(Part, kw_only=True):
    """Casts, copies and fills shorter than threshold_us (analysis/timeline/tiny_kernels.py)."""

    threshold_us: Num
    count: int
    total_us: Num
    per_step: Num
    groups: list[TinyGroup] = []


class CopyPair(Part, kw_only=True):
    """A copy whose output feeds the next op together with its own source (by shape)."""

    copy: str
    consumer: str
    dims: list
    """the copied tensor's shape"""
    python: Optional[str] = None
    count: int
    time_us: Num


class RedundantCopies(Part, kw_only=True):
    """Copies that feed an op beside their own source (analysis/timeline/redundant_copies.py)."""

    count: int
    time_us: Num
    """the copies' GPU work (host time of the copy ops on a CPU-only trace)"""
    time_kind: str
    """gpu | host"""
    per_step: Num
    pairs: list[CopyPair] = []


class Attention(Part, kw_only=True):
    """Math (unfused) vs fused attention, and eager attention blocks (analysis/timeline/host_work.py)."""

    math_calls: int = 0
    fused_calls: int = 0
    math_gpu_us: Num = 0.0
    eager_blocks: Union[int, UnsetType] = UNSET
    eager_time_us: Union[Num, UnsetType] = UNSET
    eager_time_kind: Union[Optional[str], UnsetType] = UNSET
    eager_by_shape: Union[Any, UnsetType] = UNSET
    eager_example: Union[Any, UnsetType] = UNSET


class CollectiveCount(Part, kw_only=True):
    """Communication kernels of one collective kind (all_reduce, ...), from their names."""

    collective: str  # nccl-tests' spelling (vocab/collectives.py)
    count: int
    total_us: Num

    def __post_init__(self) -> None:
        # a record written before issue #44 spells it "allreduce": read as "all_reduce", so an old
        # analysis.json and a new one name the same collective alike
        name = read_name(self.collective)
        if name != self.collective:
            msgspec.structs.force_setattr(self, "collective", name)


class Communication(Part, kw_only=True):
    """Communication kernels and how much of them compute hides (analysis/timeline/communication.py)."""

    kernels: int = 0
    total_us: Num = 0.0
    union_us: Num = 0.0
    overlap_us: Num = 0.0
    overlap_pct: Optional[Num] = None
    exposed_us: Num = 0.0
    exposed_per_step_us: Union[Num, UnsetType] = UNSET
    steps_union_us: Union[Num, UnsetType] = UNSET
    """|∪ communication| over every step's work (union_us, overlap_us and exposed_us are over the
    temporal breakdown's window: its communication part is exposed_us; absent in older records,
    whose three figures were whole-trace)"""
    collectives: list[CollectiveCount] = []


class NameCount(Part, kw_only=True):
    """Blocking host calls or `.item()`-like ops of one name (analysis/timeline/idle.py)."""

    name: str
    count: int
    total_us: Num


class CallSite(Part, kw_only=True):
    """Where the GPU idled behind a sync: the call, its enclosing ops and the user's line."""

    call: str
    op: Optional[str] = None
    python: Optional[str] = None
    gaps: int
    idle_us: Num


class IdleIntervals(Part, kw_only=True):
    """The longest idle gaps (at most MAX_INTERVALS), column by column, with their cause."""

    start_us: list[Num]
    dur_us: list[Num]
    cause: list[str]


class Spans(Part, kw_only=True):
    """Host intervals, column by column (the blocking sync calls: idle.sync_spans)."""

    start_us: list[Num]
    end_us: list[Num]


class IdleBreakdown(Part, kw_only=True):
    """Why the GPU sat idle, per cause (analysis/timeline/idle.py). The cause totals, gap count, idle
    time and DataLoader time are in every record (0 on a CPU trace); span, intervals and
    shares only where the trace has GPU work (and gaps)."""

    data_loading_us: Num = 0.0
    allocator_us: Union[Num, UnsetType] = UNSET
    """GPU idle behind allocator calls (absent in records written before issue #28)"""
    host_sync_us: Num = 0.0
    host_launch_us: Num = 0.0
    other_us: Num = 0.0
    unattributed_us: Num = 0.0
    gaps: int = 0
    idle_us: Num = 0.0
    sync_calls: list[NameCount] = []
    sync_ops: list[NameCount] = []
    allocator_calls: Union[list[NameCount], UnsetType] = UNSET
    dataloader_us: Num = 0.0
    span_us: Union[Num, UnsetType] = UNSET
    """the temporal breakdown's GPU span (HTA's rows: work launched before the last step began)"""
    work_span_us: Union[Num, UnsetType] = UNSET
    """first to last GPU activity of every step: the span of figures measured over all work"""
    intervals: Union[IdleIntervals, UnsetType] = UNSET
    call_sites: list[CallSite] = []
    data_loading_pct: Union[Num, UnsetType] = UNSET
    allocator_pct: Union[Num, UnsetType] = UNSET
    host_sync_pct: Union[Num, UnsetType] = UNSET
    host_launch_pct: Union[Num, UnsetType] = UNSET
    other_pct: Union[Num, UnsetType] = UNSET
    unattributed_pct: Union[Num, UnsetType] = UNSET
