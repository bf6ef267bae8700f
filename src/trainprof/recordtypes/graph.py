"""What the dependency graph's walks return (analysis/graph/): a rank's `critical_path` and
`whatif` blocks in analysis.json, and the `trainprof whatif` record (trainprof.whatif/1).
Method and formulas: analysis/graph/critical_path.py, whatif.py, whatif_bounds.py and
docs/critical-path.md.

The fields every version wrote since the block appeared are required; those added later are
UNSET when absent, so an older record reads as it was written.
"""

from __future__ import annotations

from typing import Optional, Union

import msgspec
from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import FrozenRecord, Num, Part

WHATIF_SCHEMA = "trainprof.whatif/1"


class PathOp(Part, kw_only=True):
    """An op (a kind and a name) on a critical path, with its time summed over the path."""

    kind: str
    """cpu_op, kernel:<class>, launch_overhead, sync_wait, idle, ... (depgraph.SEG_KINDS)"""
    name: str
    us: Num
    count: int
    share_pct: Num
    """of the path's length"""


class PathSegment(Part, kw_only=True):
    """A piece of a step's path in time order (adjacent pieces of one kind and name merged;
    past the step's cap, runs between the longest ones merged into "(N segments)")."""

    kind: str
    name: str
    start_us: Num
    dur_us: Num
    kernel_class: Union[str, UnsetType] = msgspec.field(default=UNSET, name="class")
    """a kernel's class; "class" in the file"""


class PathSummary(Part, kw_only=True):
    """A path's length and its shares by kind (the whole trace's path, or a what-if step's
    path before/after the edit: those keep no share_us)."""

    length_us: Num
    share_us: Union[dict[str, Num], UnsetType] = UNSET
    share_pct: dict[str, Num]
    """kind -> % of length_us, largest first"""
    top_ops: list[PathOp]


class PathStep(Part, kw_only=True):
    """One step's critical path: from its window's start to its last node (path_steps.py)."""

    step: int
    """-1: no steps, the whole trace"""
    start_us: Num
    length_us: Num
    share_us: dict[str, Num]
    share_pct: dict[str, Num]
    top_ops: list[PathOp]
    segments: list[PathSegment]
    """kept for the first DETAIL_STEPS steps only (critical_path.py), within the rank's budget"""
    segments_merged: Num
    queued_us: Union[Num, UnsetType] = UNSET
    """path time that waited or launched while the device ran other work, billed to that work
    (`queued behind …`; analysis/graph/queueing.py)"""
    gpu_idle_us: Union[Num, UnsetType] = UNSET
    """the device's idle time in the step's window: the path's idle + launch_overhead never
    exceed it (plus the clock offset's spread)"""


class ClockRec(Part, kw_only=True):
    """The CPU–GPU clock offset of the trace (analysis/graph/clock.py): the estimate corrected
    before the analysis, its estimators and their spread (the error it may carry)."""

    offset_us: Num
    """0: none found (or none trusted); GPU activity moved by −offset_us before the analysis"""
    spread_us: Num
    """max − min of the estimators"""
    lower_us: Optional[Num] = None
    """from the syncs: a sync returns after its work (None: no sync of certain target)"""
    upper_us: Optional[Num] = None
    """from the launches: work starts after its launch (None: no linked launch)"""
    estimates_us: dict[str, Num] = {}
    """estimator -> its value (clock.py)"""


class GraphCounts(Part, kw_only=True):
    """The dependency graph's size and what it holds (depgraph.py)."""

    nodes: int
    edges: int
    launch_latency_us: Num
    cpu_threads: Union[int, UnsetType] = UNSET
    streams: Union[int, UnsetType] = UNSET
    launch_edges: Union[int, UnsetType] = UNSET
    sync_edges: Union[int, UnsetType] = UNSET
    wait_edges: Union[int, UnsetType] = UNSET
    dropped_edges: Union[int, UnsetType] = UNSET
    graph_launch_kernels: Union[int, UnsetType] = UNSET


class CriticalPath(Part, kw_only=True):
    """A rank's `critical_path` block (analysis/graph/critical_path.py)."""

    method: str
    segment_budget: Union[int, UnsetType] = UNSET
    """segments kept in this rank's record (a job's budget split over its ranks)"""
    trace: PathSummary
    """the whole trace's path, from its last node back to the first thing recorded"""
    steps: list[PathStep]
    graph: GraphCounts
    clock: Union[ClockRec, UnsetType] = UNSET
    violations: Union[list[str], UnsetType] = UNSET
    """broken invariants (none on the shipped traces): idle + launch above the device's idle"""


class EditRec(Part, kw_only=True):
    """One edit of a what-if: `remove` a cause, or `scale` the kernels/ops matching `what`."""

    op: str
    """remove | scale"""
    what: str
    factor: Union[Num, UnsetType] = UNSET
    """a scale's factor"""


class Scenario(Part, kw_only=True):
    """One standard what-if of analysis.json (whatif.standard_whatifs): a cause removed, with
    what it may claim (whatif_bounds.py)."""

    label: str
    edits: list[EditRec]
    edges_changed: int
    measured_step_us: Num
    projected_step_us: Num
    speedup: Optional[Num] = None
    """measured ÷ projected; None when nothing is left of the step"""
    gain_pct: Num
    floor_us: Union[Num, UnsetType] = UNSET
    """the busiest stream's work per steady step: no projection goes below it"""
    removed_us: Union[Num, UnsetType] = UNSET
    """the time the edit removes per steady step (a union over time)"""
    bound_pct: Union[Num, UnsetType] = UNSET
    """the most the edit can give back: min(removed, step − floor) ÷ step"""
    violations: Union[list[str], UnsetType] = UNSET
    """checks that failed (a model bug on this trace; the projection is clamped to the bound)"""


class WhatIf(Part, kw_only=True):
    """A rank's `whatif` block: each removable cause on its own."""

    method: str
    scenarios: list[Scenario]


class StepProjection(Part, kw_only=True):
    """One step measured and re-timed; with its path before and after (`trainprof whatif`)."""

    step: int
    measured_us: Num
    projected_us: Num
    critical_path_before: Union[PathSummary, UnsetType] = UNSET
    critical_path_after: Union[PathSummary, UnsetType] = UNSET


class Projection(Part, kw_only=True):
    """The edits together, projected (whatif.project): the `trainprof whatif` record's
    scenario. Its fields in the order that record has always written them."""

    edits: list[EditRec]
    label: str
    edges_changed: int
    measured_step_us: Num
    projected_step_us: Num
    speedup: Optional[Num] = None
    gain_pct: Num
    floor_us: Num
    removed_us: Num
    violations: list[str]
    bound_pct: Num
    steps: list[StepProjection]


class WhatIfRecord(FrozenRecord, kw_only=True):
    """`trainprof whatif TRACE --json` (analysis/graph/whatif.whatif_trace)."""

    schema: str = WHATIF_SCHEMA
    file: str
    device_name: Optional[str] = None
    rank: int
    step: Optional[int] = None
    """--step, or None: every step"""
    steps_in_trace: int
    launch_latency_us: Num
    notes: list[str]
    scenarios: list[Projection]
