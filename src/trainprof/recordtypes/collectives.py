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
