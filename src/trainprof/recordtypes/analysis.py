"""analysis.json (`trainprof analyze`, `run --profile`): per rank, what the GPU timeline held
and why it idled; across ranks, stragglers and collectives. analysis/trace_report.py builds a
rank's record from the analysers' parts, jobs/analyze.py the job's; each block's formulas are
in the analyser named.

The blocks are typed where their analysers live: recordtypes/timeline.py (per-step rows,
breakdowns, top operators and kernels, communication, launch, memcpy, optimizer,
attention), roofline.py (roofs, by-shape points, a top operator's roofline), graph.py
(critical path, what-if) and collectives.py (a rank's instances, the job's matching). Each
analyser returns its Struct and the record is encoded once, where it is written: its keys are
the fields in declaration order, and a field left UNSET is not written, so a Struct must
declare its fields in the order the file has always had them. `ncu` (`analyze --ncu`,
jobs/ncu.py) is roofline.py's NcuBlock.

Every field that has a default is UNSET when absent, so a record encodes to exactly the keys
it was built with and an older record (tests/data/reports) reads as it was written; the
exceptions (idle breakdown totals and lists: 0 and []) are named where they are declared.
Required: each rank's rank, file, temporal and idle breakdowns, top operators and kernels
(each with a name), roofline header and points.
"""

from __future__ import annotations

from typing import Optional, Union

from msgspec import UNSET, UnsetType

from trainprof.recordtypes.modules import HostStacks, ModuleTable
from trainprof.recordtypes.base import FrozenRecord, Num, Part
from trainprof.recordtypes.finding import Finding  # one type from rule to report (recordtypes/finding.py)
from trainprof.recordtypes.flowchart import Flowchart
# the blocks are importable from here too, as before they moved beside their analysers
from trainprof.recordtypes.collectives import CollectiveRank, JobCollectives, JobPipeline, RankCollectives  # noqa: F401
from trainprof.recordtypes.graph import CriticalPath, WhatIf
from trainprof.recordtypes.roofline import NcuBlock, OpRoofline, RooflineHeader, RooflinePoint  # noqa: F401
from trainprof.recordtypes.timeline import (Attention, ClassRow, Communication, IdleBreakdown, KernelRow,
                                            LaunchStats, Memcpy, OpRow, Optimizer, RedundantCopies, Spans, StepRow,
                                            Temporal, TinyKernels)

SCHEMA = "trainprof.analysis/1"


class DeviceId(Part, kw_only=True):
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


class Rank(Part, kw_only=True):
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
    first_step_cpu_lead_us: Union[Optional[Num], UnsetType] = UNSET
    """the CPU's run-ahead into the first step, from its ProfilerStep's start to its first GPU
    activity: in no step's window, mean, critical path or what-if (step_windows.py)"""
    per_step: Union[list[StepRow], UnsetType] = UNSET
    """one row per step; without steps one row, step -1, that is the whole trace"""
    temporal_breakdown: Temporal
    idle_breakdown: IdleBreakdown
    top_ops: list[OpRow]
    top_kernels: list[KernelRow]
    kernel_classes: Union[list[ClassRow], UnsetType] = UNSET
    communication: Union[Optional[Communication], UnsetType] = UNSET
    collectives: Union[Optional[RankCollectives], UnsetType] = UNSET
    launch_stats: Union[Optional[LaunchStats], UnsetType] = UNSET
    memcpy: Union[Optional[Memcpy], UnsetType] = UNSET
    optimizer: Union[Optional[Optimizer], UnsetType] = UNSET
    attention: Union[Optional[Attention], UnsetType] = UNSET
    modules: Union[Optional[ModuleTable], UnsetType] = UNSET
    """per-module forward/backward times (analysis/cost/modules.py); None: no module ranges"""
    host_stacks: Union[Optional[HostStacks], UnsetType] = UNSET
    """py-spy's samples of the host over the profiled steps (--py-spy; analysis/timeline/host_stacks.py)"""
    tiny_kernels: Union[Optional[TinyKernels], UnsetType] = UNSET
    """casts/copies/fills shorter than 20 µs (issue #39); None on a CPU-only trace"""
    redundant_copies: Union[Optional[RedundantCopies], UnsetType] = UNSET
    sync_spans: Union[Optional[Spans], UnsetType] = UNSET
    """the blocking host calls' intervals (the longest 1,000): which a late peer's collective released"""
    tensor_core_pct: Union[Optional[Num], UnsetType] = UNSET
    matmul_us: Union[Optional[Num], UnsetType] = UNSET
    matmul_tensor_core_us: Union[Optional[Num], UnsetType] = UNSET
    roofline: RooflineHeader
    roofline_points: list[RooflinePoint]
    critical_path: Union[Optional[CriticalPath], UnsetType] = UNSET
    whatif: Union[Optional[WhatIf], UnsetType] = UNSET
    notes: Union[list[str], UnsetType] = UNSET
    findings: Union[list[Finding], UnsetType] = UNSET
    bottleneck: Union[Optional[str], UnsetType] = UNSET
    """the principal limiter (diagnose/engine.principal)"""


class Spread(Part, kw_only=True):
    min: Num
    median: Num
    max: Num


class RankRow(Part, kw_only=True):
    """One rank's per-step medians beside the others (analysis/job/multirank.py)."""

    rank: int
    step_time_us: Optional[Num] = None
    """the median step on the device timeline; without one (CPU-only traces) the host's
    ProfilerStep range (MultiRank.device_timeline False)"""
    compute_us: Optional[Num]
    """None (with communication, idle and wait) where no rank's trace has GPU activity: those
    are device-timeline figures a CPU-only trace cannot measure (they read 0 before issue #37)"""
    communication_us: Optional[Num]
    idle_us: Optional[Num]
    wait_us: Optional[Num]
    """communication time beyond the least-communicating rank's"""


class ComputeStraggler(Part, kw_only=True):
    """A rank that computes more per step while the others wait in collectives (multirank.py)."""

    rank: int
    compute_excess_pct: Num
    others_wait_us: Num


class MultiRank(Part, kw_only=True):
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
    pipeline: Union[Optional[JobPipeline], UnsetType] = UNSET
    """the pipeline bubble per stage, where the ranks ran a pipeline schedule (analysis/job/bubble.py)"""
    device_timeline: Union[bool, UnsetType] = UNSET
    """False: no rank's trace has GPU activity (a CPU job): the per-rank rows have a host step
    time and no compute, communication, idle or wait (the matched collectives measure the waits)"""


class Unreadable(Part, kw_only=True):
    file: str
    error: str


class Analysis(FrozenRecord, kw_only=True):
    schema: str = SCHEMA
    ranks: list[Rank]
    multi_rank: Union[Optional[MultiRank], UnsetType] = UNSET
    """the cross-rank comparison (analysis/job/multirank.py), None for one rank"""
    unreadable: Union[list[Unreadable], UnsetType] = UNSET
    """traces that could not be read, each with its one-line error"""
    ncu: Union[NcuBlock, UnsetType] = UNSET
    """`analyze --ncu`: Nsight Compute metrics joined to the top kernels"""
    flowchart: Union[Flowchart, UnsetType] = UNSET
    """seed 002's flowchart path for the first rank (with run.json where the trace came from a
    run; diagnose/flowchart.py), computed once; the reports lay it out as stored"""
