"""analysis.json (`trainprof analyze`, `run --profile`): per rank, what the GPU timeline held
and why it idled; across ranks, stragglers and collectives. analysis/trace_report.py builds a
rank's record, jobs/analyze.py the job's; each block's formulas are in the analyser named.

Typed here: the top level, each rank's scalars, and the blocks whose shape is settled
(per-step rows, temporal and idle breakdowns, top operators and kernels, kernel classes, the
roofline header, communication, launch, memcpy, optimizer and attention blocks, findings).
Typed too: multi_rank with its matched collectives (job level). Still `dict`: each rank's
critical_path, whatif and collectives blocks (column tables whose analysers are changing),
roofline_points (fields vary with the op). A field added to a typed block must be
added here too, or the Struct drops it from the file: jobs/analyze.analysis_record raises
naming it, and tests/unit/recordtypes checks that real analysed records pass through
unchanged. The diagnosis rules read a rank through this Struct (diagnose/engine.py); the
analysers build dicts, checked here where the file is written (analysis_record) and where
`report` reads it.

Every field that has a default is UNSET when absent, so a record encodes to exactly the keys
it was built with (a CPU trace's per-step rows carry no GPU columns; an older record lacks
newer blocks) and nothing is added on the way; the one exception is the idle breakdown's
totals and lists, which default to 0 and [] (analysis/timeline/idle.py writes them on every trace, so
the rules can read them without a test for absence).

Required, as report/schemas.py required before: each rank's rank, file, temporal and idle
breakdowns, top operators and kernels (each with a name), roofline header and points.
A roofline point is kept as written (its fields vary with the op); its name is not checked.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import msgspec
from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import Block, Num, Record

SCHEMA = "trainprof.analysis/1"


class StepRow(Block, kw_only=True):
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


class Temporal(Block, kw_only=True):
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


class OpRoofline(Block, kw_only=True):
    """A top operator on the roofline, priced over all its calls against its own total_us
    (analysis/cost/roofline_top.py); FLOPs None when no call has a formula and shapes."""

    calls: Optional[int] = None
    calls_priced: Optional[int] = None
    flops: Optional[Num] = None
    bytes: Optional[Num] = None
    intensity: Optional[Num] = None
    """FLOP/byte"""
    achieved_tflops: Optional[Num] = None
    attainable_tflops: Optional[Num] = None
    roofline_pct: Optional[Num] = None
    bound: Optional[str] = None
    """compute | memory | latency"""
    dtype: Optional[str] = None
    tensor_core: Union[bool, UnsetType] = UNSET
    note: Optional[str] = None


class OpRow(Block, kw_only=True):
    """A top operator (analysis/timeline/ops.py): GPU time of the kernels it launched, or its CPU time."""

    name: str
    metric: Union[Optional[str], UnsetType] = UNSET
    """gpu | cpu: what total_us measures"""
    calls: Union[Optional[int], UnsetType] = UNSET
    kernels: Union[Optional[int], UnsetType] = UNSET
    total_us: Union[Num, UnsetType] = UNSET
    mean_us: Union[Optional[Num], UnsetType] = UNSET
    share_pct: Union[Optional[Num], UnsetType] = UNSET
    roofline: Union[Optional[OpRoofline], UnsetType] = UNSET
    """the first rows' place on the roofline (UNSET in records written before it)"""


class KernelRow(Block, kw_only=True):
    name: str
    kind: Union[Optional[str], UnsetType] = msgspec.field(default=UNSET, name="class")
    """the kernel class (trace/ classification tables); "class" in the file"""
    tensor_core: Union[Optional[bool], UnsetType] = UNSET
    count: Union[Optional[int], UnsetType] = UNSET
    total_us: Union[Num, UnsetType] = UNSET
    mean_us: Union[Optional[Num], UnsetType] = UNSET
    share_pct: Union[Optional[Num], UnsetType] = UNSET


class ClassRow(Block, kw_only=True):
    kind: str = msgspec.field(name="class")
    total_us: Union[Num, UnsetType] = UNSET
    share_pct: Union[Optional[Num], UnsetType] = UNSET


class RooflineHeader(Block, kw_only=True):
    """The roofs the points are judged against (analysis/cost/roofline.roofline_header)."""

    peak_tflops: Union[Optional[Num], UnsetType] = UNSET
    peak_bandwidth_gbs: Union[Optional[Num], UnsetType] = UNSET
    ridge_flop_per_byte: Union[Optional[Num], UnsetType] = UNSET
    dtype: Union[Optional[str], UnsetType] = UNSET
    source: Union[Optional[str], UnsetType] = UNSET
    """datasheet:<spec key> | measured on this machine | user | unknown"""
    peaks_by_dtype: Union[dict[str, Num], UnsetType] = UNSET
    hint: Union[Optional[str], UnsetType] = UNSET


class Latency(Block, kw_only=True):
    count: int = 0
    mean_us: Union[Optional[Num], UnsetType] = UNSET
    p50_us: Union[Optional[Num], UnsetType] = UNSET
    p95_us: Union[Optional[Num], UnsetType] = UNSET


class LaunchStats(Block, kw_only=True):
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


class Memcpy(Block, kw_only=True):
    """Copies, and the pageable ones a pinned buffer would speed up (analysis/timeline/host_work.py)."""

    count: int = 0
    total_us: Num = 0.0
    pageable_us: Num = 0.0
    pageable_count: int = 0
    by_kind: dict[str, dict[str, Any]] = {}


class Optimizer(Block, kw_only=True):
    """optimizer.step() work (analysis/timeline/host_work.py); only `steps` when none was seen."""

    steps: int = 0
    classes: Union[list[str], UnsetType] = UNSET
    cpu_us: Union[Num, UnsetType] = UNSET
    kernels: Union[int, UnsetType] = UNSET
    gpu_us: Union[Num, UnsetType] = UNSET
    kernels_per_step: Union[Num, UnsetType] = UNSET


class Attention(Block, kw_only=True):
    """Math (unfused) vs fused attention, and eager attention blocks (analysis/timeline/host_work.py)."""

    math_calls: int = 0
    fused_calls: int = 0
    math_gpu_us: Num = 0.0
    eager_blocks: Union[int, UnsetType] = UNSET
    eager_time_us: Union[Num, UnsetType] = UNSET
    eager_time_kind: Union[Optional[str], UnsetType] = UNSET
    eager_by_shape: Union[Any, UnsetType] = UNSET
    eager_example: Union[Any, UnsetType] = UNSET


class Communication(Block, kw_only=True):
    """Communication kernels and how much of them compute hides (analysis/timeline/communication.py)."""

    kernels: int = 0
    total_us: Num = 0.0
    union_us: Num = 0.0
    overlap_us: Num = 0.0
    overlap_pct: Optional[Num] = None
    exposed_us: Num = 0.0
    exposed_per_step_us: Union[Num, UnsetType] = UNSET
    collectives: list[dict[str, Any]] = []


class NameCount(Block, kw_only=True):
    """Blocking host calls or `.item()`-like ops of one name (analysis/timeline/idle.py)."""

    name: str
    count: int
    total_us: Num


class CallSite(Block, kw_only=True):
    """Where the GPU idled behind a sync: the call, its enclosing ops and the user's line."""

    call: str
    op: Optional[str] = None
    python: Optional[str] = None
    gaps: int
    idle_us: Num


class IdleIntervals(Block, kw_only=True):
    """The longest idle gaps (at most MAX_INTERVALS), column by column, with their cause."""

    start_us: list[Num]
    dur_us: list[Num]
    cause: list[str]


class IdleBreakdown(Block, kw_only=True):
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


class Finding(Block, kw_only=True):
    """diagnose/finding.py: one rule's verdict with its evidence."""

    id: str
    severity: Union[Optional[str], UnsetType] = UNSET
    title: Union[Optional[str], UnsetType] = UNSET
    evidence: Union[Optional[str], UnsetType] = UNSET
    estimated_gain_pct: Union[Optional[Num], UnsetType] = UNSET
    fix: Union[Optional[str], UnsetType] = UNSET
    confidence: Union[Optional[str], UnsetType] = UNSET
    bottleneck: Union[Optional[str], UnsetType] = UNSET
    projected_gain_pct: Union[Optional[Num], UnsetType] = UNSET


class DeviceId(Block, kw_only=True):
    """hardware/identity.py: the device the trace ran on, as far as the trace shows it."""

    label: str
    """the header's device line: the name, or what is known of an unnamed GPU"""
    gpu: bool
    """the trace ran on a GPU: GPU activity, or CUDA/HIP runtime/driver calls"""
    name: Optional[str] = None
    vendor: Optional[str] = None
    arch: Optional[str] = None
    """known exactly: sm_75, gfx942"""
    min_arch: Optional[str] = None
    """only a lower bound is known (sm80 kernels run on sm_80 and every newer GPU)"""
    family: Optional[str] = None
    basis: Optional[str] = None
    """how the architecture was found"""
    bf16: Optional[bool] = None
    tensor_cores: Optional[bool] = None
    tf32: Optional[bool] = None
    spec_key: Optional[str] = None
    spec_assumed: bool = False
    """spec_key implied by the architecture alone (one product), not by the name"""


class Rank(Block, kw_only=True):
    """One trace's record (analysis/trace_report.analyze_trace), with its findings."""

    rank: int
    file: str
    device_name: Union[Optional[str], UnsetType] = UNSET
    device: Union[Optional[DeviceId], UnsetType] = UNSET
    world_size: Union[Optional[int], UnsetType] = UNSET
    events: Union[int, UnsetType] = UNSET
    skipped_events: Union[int, UnsetType] = UNSET
    time_unit: Union[Optional[str], UnsetType] = UNSET
    has_gpu: Union[bool, UnsetType] = UNSET
    steps: Union[int, UnsetType] = UNSET
    """0 when the trace has neither ProfilerStep markers nor an iteration annotation"""
    steps_from: Union[Optional[str], UnsetType] = UNSET
    """where the steps came from: "ProfilerStep", an annotation (trace/iterations.py), null: none"""
    step_time_us: Union[Optional[Num], UnsetType] = UNSET
    """median GPU span of the steps; null without steps (no per-step figure for a whole trace)"""
    per_step: Union[list[StepRow], UnsetType] = UNSET
    """one row per step; without steps one row, step -1, that is the whole trace"""
    temporal_breakdown: Temporal
    idle_breakdown: IdleBreakdown
    top_ops: list[OpRow]
    top_kernels: list[KernelRow]
    kernel_classes: Union[list[ClassRow], UnsetType] = UNSET
    communication: Union[Optional[Communication], UnsetType] = UNSET
    collectives: Union[Optional[dict[str, Any]], UnsetType] = UNSET
    launch_stats: Union[Optional[LaunchStats], UnsetType] = UNSET
    memcpy: Union[Optional[Memcpy], UnsetType] = UNSET
    optimizer: Union[Optional[Optimizer], UnsetType] = UNSET
    attention: Union[Optional[Attention], UnsetType] = UNSET
    tensor_core_pct: Union[Optional[Num], UnsetType] = UNSET
    matmul_us: Union[Optional[Num], UnsetType] = UNSET
    matmul_tensor_core_us: Union[Optional[Num], UnsetType] = UNSET
    roofline: RooflineHeader
    roofline_points: list[dict[str, Any]]
    critical_path: Union[Optional[dict[str, Any]], UnsetType] = UNSET
    whatif: Union[Optional[dict[str, Any]], UnsetType] = UNSET
    notes: Union[list[str], UnsetType] = UNSET
    findings: Union[list[Finding], UnsetType] = UNSET
    bottleneck: Union[Optional[str], UnsetType] = UNSET
    """the principal limiter (diagnose/engine.principal)"""


class Spread(Block, kw_only=True):
    min: Num
    median: Num
    max: Num


class RankRow(Block, kw_only=True):
    """One rank's per-step medians beside the others (analysis/job/multirank.py)."""

    rank: int
    step_time_us: Optional[Num] = None
    compute_us: Num
    communication_us: Num
    idle_us: Num
    wait_us: Num
    """communication time beyond the least-communicating rank's"""


class ComputeStraggler(Block, kw_only=True):
    """A rank that computes more per step while the others wait in collectives (multirank.py)."""

    rank: int
    compute_excess_pct: Num
    others_wait_us: Num


class WaitedFor(Block, kw_only=True):
    """A rank this rank waited for, with the part of its waits attributed to it."""

    rank: int
    wait_us: Num


class CollectiveRank(Block, kw_only=True):
    """One rank over the matched collectives (analysis/job/collectives_job.py)."""

    rank: int
    collectives: int
    wait_us: Num
    """its waits for the last arriver: the union of its wait intervals (≤ span_us)"""
    caused_wait_us: Num
    """the others' waits for it, summed over the collectives where it arrived last"""
    last_count: int
    caused_share_pct: Num
    """its share of the job's waits (attributed, disjoint: the ranks' shares sum to 100%)"""
    clock_offset_us: Num
    matched: Union[int, UnsetType] = UNSET
    """its instances in collectives present on every rank of their group"""
    dropped_head: Union[int, UnsetType] = UNSET
    """instances before its first matched one (its window began earlier than another rank's)"""
    dropped_tail: Union[int, UnsetType] = UNSET
    span_us: Union[Num, UnsetType] = UNSET
    """first arrival to last end over its matched collectives"""
    others_wait_us: Union[Num, UnsetType] = UNSET
    """the mean other rank's wait attributed to this rank (disjoint between culprits)"""
    gain_pct: Union[Num, UnsetType] = UNSET
    """others_wait_us / the job's span: what the others would get back if it arrived with them"""
    first_collective_pct: Union[Num, UnsetType] = UNSET
    """share of caused_wait_us at the first collective of its profiler steps"""
    waited_for: Union[list[WaitedFor], UnsetType] = UNSET


class LateRank(Block, kw_only=True):
    rank: int
    median_late_us: Num
    max_late_us: Num
    late_us: list[Num]


class Lateness(Block, kw_only=True):
    """Entering the common profiler steps after the first rank (analysis/job/lateness.py)."""

    steps: list[int]
    per_rank: list[LateRank]


class CollectiveGroup(Block, kw_only=True):
    """One (process group, op): medians over its matched collectives."""

    group: str
    op: str
    count: int
    bytes: Num
    median_latency_us: Num
    median_skew_us: Num
    max_skew_us: Num
    median_busbw_gbs: Optional[Num] = None
    aggregate_busbw_gbs: Union[Optional[Num], UnsetType] = UNSET
    median_compute_overlap_pct: Union[Optional[Num], UnsetType] = UNSET


class MatchedCollective(Block, kw_only=True):
    """One matched collective across ranks (the slowest few are kept)."""

    group: str
    op: str
    seq: int
    bytes: Optional[Num] = None
    skew_us: Num
    latency_us: Num
    end_skew_us: Num
    last_rank: int
    algbw_gbs: Optional[Num] = None
    busbw_gbs: Optional[Num] = None
    compute_overlap_pct: Union[Optional[Num], UnsetType] = UNSET


class JobCollectives(Block, kw_only=True):
    """Collectives matched across ranks by content (analysis/job/collectives_align.py, _job.py)."""

    schema: str
    ranks: int
    world_size: int
    matched: int
    unmatched: dict[str, int] = {}
    consistent: bool
    total_wait_us: Num
    span_us: Num
    per_rank: list[CollectiveRank]
    lateness: Optional[Lateness] = None
    groups: list[CollectiveGroup]
    slowest: list[MatchedCollective]
    alignment: Union[dict[str, int], UnsetType] = UNSET
    """(rank, group) alignments per method: seq, signature, clock"""
    wait_bound_pct: Union[Num, UnsetType] = UNSET
    """Σ wait_us / ((ranks − 1) · span_us): what the culprits' gains can claim together"""
    clipped_waits: Union[int, UnsetType] = UNSET
    """waits longer than the waiting rank's own collective, clipped to it"""
    notes: Union[list[str], UnsetType] = UNSET


class MultiRank(Block, kw_only=True):
    """Across ranks (analysis/job/multirank.py), the matched collectives and the job findings."""

    ranks: int
    step_time_us: Union[Optional[Spread], UnsetType] = UNSET
    compute_us: Union[Spread, UnsetType] = UNSET
    communication_us: Union[Spread, UnsetType] = UNSET
    per_rank: Union[list[RankRow], UnsetType] = UNSET
    stragglers: list[ComputeStraggler] = []
    threshold_pct: Union[Num, UnsetType] = UNSET
    warnings: Union[list[str], UnsetType] = UNSET
    collectives: Union[Optional[JobCollectives], UnsetType] = UNSET
    findings: Union[list[Finding], UnsetType] = UNSET


class Unreadable(Block, kw_only=True):
    file: str
    error: str


class Analysis(Record, kw_only=True):
    schema: str = SCHEMA
    ranks: list[Rank]
    multi_rank: Union[Optional[MultiRank], UnsetType] = UNSET
    """the cross-rank comparison (analysis/job/multirank.py), None for one rank"""
    unreadable: Union[list[Unreadable], UnsetType] = UNSET
    """traces that could not be read, each with its one-line error"""
    ncu: Union[dict[str, Any], UnsetType] = UNSET
    """`analyze --ncu`: Nsight Compute metrics joined to the top kernels"""
