"""Collectives: one rank's instances (a rank's `collectives` block in analysis.json,
analysis/job/collectives.py) and the job's matched collectives (`multi_rank.collectives`,
analysis/job/collectives_job.py, with the alignment, waits, lateness and bandwidth of
collectives_align.py, collectives_waits.py, lateness.py and collectives_table.py). The
formulas are in those modules' docstrings; docs/collectives.md has the method.

A rank's block is columns (one list per field, an entry per instance) so 5,000 instances
stay compact. Fields added after the first version are UNSET when absent, so an older record
(trainprof.collectives/1 without sizes or overlap; trainprof.collectives_job/1 without the
world size, alignment, span and notes) still loads and renders.
"""

from __future__ import annotations

from typing import Optional, Union

from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import Num, Part

RANK_SCHEMA = "trainprof.collectives/1"
JOB_SCHEMA = "trainprof.collectives_job/2"


class ProcessGroup(Part, kw_only=True):
    """A process group of this rank as its trace lists it (distributedInfo.pg_config)."""

    name: str
    desc: Optional[str] = None
    """the axis its description spells (`tp` for DeviceMesh's `mesh_tp`), `default_pg`, or None
    (the raw description is not kept: trace/process_groups.py)"""
    ranks: list[int]


class MeshLayout(Part, kw_only=True):
    """The layout trainprof's own parallel run recorded in the trace (workload/mesh.py)."""

    dims: list[tuple[str, int]]
    """mesh dimensions outer to inner, e.g. [["dp", 2], ["tp", 2]]"""
    schedule: Optional[str] = None
    microbatches: Optional[int] = None


class StageStep(Part, kw_only=True):
    """One profiler step of a pipeline stage (analysis/job/pipeline_rank.py), on the rank's clock."""

    step: int
    microbatches: int
    """forward passes of the schedule in the step (its `Forward i` ranges)"""
    start_us: Num
    """the first forward/backward range's start"""
    end_us: Num
    busy_us: Num
    """Σ forward/backward ranges − the receive waits inside them"""
    recv_wait_us: Num
    """time blocked receiving activations or gradients inside those ranges"""


class RankPipeline(Part, kw_only=True):
    steps: list[StageStep]


class RankCollectives(Part, kw_only=True):
    """One rank's collective instances in time order (at most MAX_INSTANCES are kept)."""

    schema: str = RANK_SCHEMA
    source: str
    """nccl (communication kernels) | gloo (gloo:<op> annotations on the host)"""
    count: int
    """instances in the trace"""
    kept: int
    """instances in the columns (the first ones in time order)"""
    group_size: Union[dict[str, int], UnsetType] = UNSET
    """ranks per process group as recorded ("Group size"); the default group: the world size"""
    clock_base_us: Union[Optional[Num], UnsetType] = UNSET
    """baseTimeNanoseconds in µs: ranks whose bases differ are put on one clock with it"""
    op: list[str]
    group: list[str]
    seq: list[int]
    """the k-th instance of its (group, op) on this rank (a label; matching aligns sequences)"""
    bytes: list[Optional[Num]]
    nelems: Union[list[Optional[int]], UnsetType] = UNSET
    dtype: Union[list[Optional[str]], UnsetType] = UNSET
    start_us: list[Num]
    """arrival: when this rank reached the collective"""
    end_us: list[Num]
    step: Union[list[Optional[int]], UnsetType] = UNSET
    """the ProfilerStep whose CPU interval holds the launch (None: none)"""
    compute_overlap_pct: Union[list[Optional[Num]], UnsetType] = UNSET
    step_number: list[int] = []
    step_cpu_start_us: list[Num] = []
    """host-side step entries, shown beside the waits (lateness.py)"""
    seq_id: Union[list[Optional[int]], UnsetType] = UNSET
    """recorded sequence numbers (Kineto's `Seq`, PyTorch's own numbering); present only when
    the trace records them (docs/collectives.md), and the matching pairs by them"""
    peer: Union[list[Optional[int]], UnsetType] = UNSET
    """send/recv (gloo): the global rank on the other side; None for collectives"""
    step_cpu_end_us: Union[list[Num], UnsetType] = UNSET
    process_groups: Union[list[ProcessGroup], UnsetType] = UNSET
    """this rank's process groups as the trace lists them (for the axis of each collective)"""
    mesh: Union[MeshLayout, UnsetType] = UNSET
    pipeline: Union[RankPipeline, UnsetType] = UNSET
    """the stage's schedule ranges per step, where the trace has trainprof's (workload/pipeline.py) or
    torch.distributed.pipelining's"""


class Alignment(Part, kw_only=True):
    """How many (rank, process group) sequences each method aligned (collectives_align.py);
    a method that aligned none is absent. Fields in name order, as the record always wrote them."""

    clock: Union[int, UnsetType] = UNSET
    overlap: Union[int, UnsetType] = UNSET
    seq: Union[int, UnsetType] = UNSET
    signature: Union[int, UnsetType] = UNSET
    step: Union[int, UnsetType] = UNSET


class WaitedFor(Part, kw_only=True):
    """A rank this rank waited for, with the part of its waits attributed to it."""

    rank: int
    wait_us: Num


class CollectiveRank(Part, kw_only=True):
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

    @property
    def others_waited(self) -> bool:
        """The one test for naming a rank a culprit (a straggler, a late rank, a finding's
        subject): it arrived last somewhere and the others waited for it there."""
        return self.last_count > 0 and self.caused_wait_us > 0


class LateRank(Part, kw_only=True):
    rank: int
    median_late_us: Num
    max_late_us: Num
    late_us: list[Num]


class Lateness(Part, kw_only=True):
    """Entering the common profiler steps after the peers' median entry (analysis/job/lateness.py)."""

    steps: list[int]
    per_rank: list[LateRank]


class CollectiveGroup(Part, kw_only=True):
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
    link_pct: Union[Optional[Num], UnsetType] = UNSET
    """median_busbw_gbs as a % of the link's per-direction bandwidth (JobCollectives.link); absent
    where the link is unknown, None where the group has no busbw"""


class LinkRef(Part, kw_only=True):
    """The link the job's collectives are put against (hardware/references.toml's link rows)."""

    key: str
    name: str
    gbs: Num
    """per direction, the unit of a collective's bus bandwidth"""
    source: str
    basis: str
    """how it was chosen: the user's --link, or the device's link within one node"""


class MatchedCollective(Part, kw_only=True):
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


class GroupAxis(Part, kw_only=True):
    """A process group and the parallelism axis it serves (analysis/job/axes.py)."""

    name: str
    desc: Optional[str] = None
    ranks: list[int]
    axis: str
    """dp | fsdp | tp | pp | ep | cp | world (every rank: no one axis) | unknown"""
    rule: str
    """what decided: name (its description/name) | mesh (trainprof's recorded layout) | shape (its rank set) | none"""


class AxisSummary(Part, kw_only=True):
    """One axis over the window (analysis/job/axes_table.py); per-rank figures are means over
    the ranks that communicate on the axis."""

    axis: str
    groups: list[str]
    rules: list[str]
    """the rules that classified its groups"""
    collectives: int
    """matched collectives, plus send/recv instances (point-to-point: not matched as collectives)"""
    bytes: Num
    time_us: Num
    """Σ of a rank's collective durations on the axis (arrival to end), mean over its ranks"""
    exposed_us: Num
    """the part of time_us with no compute beside it on that rank (1 − overlap), mean over ranks"""
    wait_us: Num
    """the part of time_us spent waiting for the group's last arriver, mean over ranks"""
    share_pct: Optional[Num] = None
    """time_us / the rank's profiled steps, mean over ranks"""
    exposed_share_pct: Optional[Num] = None
    compute_overlap_pct: Optional[Num] = None
    """1 − exposed/time, as a %"""
    busbw_gbs: Optional[Num] = None
    """Σ S·factor / Σ latency over its sized matched collectives (nccl-tests' busbw, aggregated)"""
    straggler_rank: Optional[int] = None
    """the rank the others waited for most on this axis (None: nobody waited)"""
    straggler_caused_us: Num = 0.0
    """Σ over the other ranks of their waits for it on this axis"""
    straggler_share_pct: Optional[Num] = None
    """its share of the axis' waits"""


class JobCollectives(Part, kw_only=True):
    """Collectives matched across ranks by content (analysis/job/collectives_align.py, _job.py)."""

    schema: str = JOB_SCHEMA
    ranks: int
    world_size: Union[int, UnsetType] = UNSET
    """the job's ranks as the traces record them (≥ ranks: a job analysed from a sample)"""
    matched: int
    unmatched: dict[str, int] = {}
    consistent: bool
    total_wait_us: Num
    span_us: Union[Num, UnsetType] = UNSET
    """first arrival to last end of the matched collectives on the aligned clocks"""
    per_rank: list[CollectiveRank]
    lateness: Optional[Lateness] = None
    groups: list[CollectiveGroup]
    slowest: list[MatchedCollective]
    alignment: Union[Alignment, UnsetType] = UNSET
    """(rank, group) alignments per method (collectives_align.py)"""
    wait_bound_pct: Union[Num, UnsetType] = UNSET
    """Σ wait_us / ((ranks − 1) · span_us): what the culprits' gains can claim together"""
    clipped_waits: Union[int, UnsetType] = UNSET
    """waits longer than the waiting rank's own collective, clipped to it"""
    notes: Union[list[str], UnsetType] = UNSET
    process_groups: Union[list[GroupAxis], UnsetType] = UNSET
    """every group the collectives ran in, with its axis and the rule that decided it"""
    axes: Union[list[AxisSummary], UnsetType] = UNSET
    """per parallelism axis: time, exposed time, waits, bandwidth, share of the steps, straggler"""
    link: Union[Optional[LinkRef], UnsetType] = UNSET
    """the link each group's busbw is a share of (analysis/job/link_share.py); None: unknown"""


class StageBubble(Part, kw_only=True):
    """One pipeline stage over the common steps (analysis/job/bubble.py); sums over the steps."""

    stage: int
    rank: int
    busy_us: Num
    """computing inside the schedule's forward/backward ranges"""
    bubble_us: Num
    """window − busy: waiting for a neighbour, before its first and after its last micro-batch"""
    bubble_pct: Num
    """bubble / window"""
    inherent_us: Num
    """the schedule's own bubble for this stage: (p − 1)/m · busy"""
    excess_us: Num
    """bubble − inherent (≥ 0 shown; negative: this stage is the one the others wait for)"""
    recv_wait_us: Num
    """of the bubble, the time blocked in a receive inside its ranges"""
    imbalance_us: Num
    """busy − the mean of the other stages' busy: how much longer this stage computes"""


class PipelineBubble(Part, kw_only=True):
    """One pipeline (its stages in order) over the steps every stage profiled."""

    ranks: list[int]
    """stage 0 first"""
    schedule: Optional[str] = None
    stages: int
    microbatches: int
    """m: forward ranges per step on a stage (the median)"""
    steps: list[int]
    window_us: Num
    """Σ over the steps of the schedule's window: first range start to last range end, any stage"""
    inherent_pct: Num
    """(p − 1)/(m + p − 1): GPipe's and 1F1B's bubble with p stages, m micro-batches"""
    measured_pct: Num
    """mean over the stages of bubble / window"""
    excess_pct: Num
    """measured − inherent"""
    per_stage: list[StageBubble]
    slowest_stage: int
    """the stage with the most busy time: the one the others wait for"""
    what_if_microbatches: int
    """2m"""
    what_if_inherent_pct: Num
    """(p − 1)/(2m + p − 1)"""
    what_if_gain_us: Num
    """the inherent bubble's time 2m would save: (p − 1)·busy_max/(2m) over the steps"""
    per_step_pct: list[Num] = []
    """measured_pct per step"""


class JobPipeline(Part, kw_only=True):
    pipelines: list[PipelineBubble]
