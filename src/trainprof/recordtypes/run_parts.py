"""run.json's smaller blocks as Structs: the measured CPU peak's provenance, the achievable
ceiling, the memory snapshot, a job's ranks (`distributed`) and `trainprof profile`'s window.

Same wire form as the dicts they were (recordtypes/base.Wire's rules): fields in the
writer's key order; a key written only with a value defaults to None and is left out when None;
a key always written, null or not, has no default; UNSET where a key is both sometimes absent
(a record older than the key: run.json's schema was never bumped) and sometimes null.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import Num, Wire


class PeakMeasurement(Wire, frozen=True, kw_only=True):
    """A measured CPU peak's provenance (backends/cpu_peak.Measurement, device_info._measured):
    `device.peak_measurement`."""

    value: Num  # TFLOP/s of the dtype MFU divides by
    key: str  # the cache's key: machine, torch, threads, dtype
    source: str  # "measured" | "cached, checked"
    measured_at: str  # ISO-8601 UTC
    others_cpu_share: Optional[Num]  # load during that measurement
    load_avg_1m_per_core: Optional[Num]
    reference: Optional[Num]  # the quick check taken with that measurement
    check: Optional[Num]  # this use's quick check of a cached value
    cached: bool
    note: str
    tflops_by_dtype: dict[str, Num]
    no_native_matmul: Optional[str]  # the 16-bit dtype emulated through fp32 (MFU against fp32)


class Achievable(Wire, frozen=True, kw_only=True):
    """The measured matmul ceiling MFU is put against (backends/ceiling.lookup, docs/metrics.md
    "% of achievable"): tflops with when and where it was measured, or null with why."""

    tflops: Optional[Num]
    dtype: Optional[str] = None
    measured_at: Optional[str] = None
    source: Optional[str] = None
    why: Optional[str] = None


class SnapshotCategories(Wire, frozen=True, kw_only=True):
    """Memory by category at the recorded steps' peak (analysis/run/memory_snapshot.peak_by_category),
    or why the memory profiler gave none."""

    unavailable: Optional[str] = None
    peak_bytes: Optional[int] = None
    peak_time_us: Optional[int] = None
    at_peak: Optional[dict[str, int]] = None
    max: Optional[dict[str, int]] = None


class Fragmentation(Wire, frozen=True, kw_only=True):
    """The allocator's segments at the snapshot (memory_snapshot.fragmentation)."""

    segments: int
    reserved_bytes: int
    allocated_bytes: int
    free_bytes: int
    largest_free_block_bytes: int
    fragmentation: Num  # free / reserved
    external_fragmentation: Num  # 1 - largest free block / free


class AllocatorPeaks(Wire, frozen=True, kw_only=True):
    """torch.cuda.memory_stats' peaks over the recorded steps (memory_snapshot.peak_stats)."""

    peak_reserved_bytes: Optional[int]
    peak_allocated_bytes: Optional[int]
    num_alloc_retries: Optional[int]
    num_ooms: Optional[int]
    peak_unused_reserved_fraction: Optional[Num] = None


class MemorySnapshot(Wire, frozen=True, kw_only=True):
    """`run --memory-snapshot` (collect/memory_snapshot.snapshot_steps)."""

    categories: SnapshotCategories
    fragmentation: Fragmentation
    allocator: AllocatorPeaks
    file: Optional[str] = None  # the pickle beside run.json, for pytorch.org/memory_viz
    viewer: Optional[str] = None


class RankRow(Wire, frozen=True, kw_only=True):
    """One rank's mean phase times in a job (`distributed.per_rank`)."""

    rank: int
    step_time_s: Num
    step_time_median_s: Optional[Num] = None
    forward_s: Optional[Num] = None
    backward_s: Optional[Num] = None
    optimizer_s: Optional[Num] = None
    data_s: Optional[Num] = None
    cpu_affinity: Optional[str] = None  # `run --nproc` (workload/affinity.environment)
    numa_binding: Optional[dict[str, Any]] = None  # `run --bind-numa`


class Distributed(Wire, frozen=True, kw_only=True):
    """A job of several ranks in lockstep (`run --nproc`: workload/trainer._job_summary;
    `profile`: jobs/profile_records.job_view): it runs at its slowest rank's pace."""

    world_size: int
    strategy: str
    backend: str
    global_batch_tokens: Num
    job_tokens_per_s: Num
    per_rank: list[RankRow]
    ranks_recorded: Optional[int] = None  # `profile`: ranks whose records were found
    straggler_rank: Optional[int] = None
    straggler_excess_pct: Optional[Num] = None


class Profile(Wire, frozen=True, kw_only=True):
    """`trainprof profile`'s window on one rank (inject/part.profile_block, then the window's
    own figures, inject/window._window_stats; docs/profile.md). Its keys changed often while
    `profile` grew: a key that may be null is UNSET when absent, so any of its records decodes."""

    rank: Optional[int] = None
    local_rank: Optional[int] = None
    world_size: Optional[int] = None
    local_world_size: Optional[int] = None
    process_group_backend: Union[str, None, UnsetType] = UNSET  # null: no process group
    boundary: Optional[str] = None  # what one step is: "optimizer.step() of AdamW", "--step-marker ..."
    optimizer_steps: Optional[dict[str, int]] = None
    steps_seen: Optional[int] = None
    warmup_steps: Optional[int] = None
    flops_step: Optional[int] = None
    flops_check_step: Union[int, None, UnsetType] = UNSET
    measured_steps: Union[list[int], None, UnsetType] = UNSET  # [first, last]
    profiled_steps: Union[list[int], None, UnsetType] = UNSET
    window_complete: Optional[bool] = None
    root_modules: Optional[list[str]] = None
    dtype_from: Union[str, None, UnsetType] = UNSET
    error: Union[str, None, UnsetType] = UNSET  # the agent's own failure
    knobs: Optional[dict[str, Any]] = None  # a tune trial's (inject/knobs.py)
    warnings: Optional[list[str]] = None
    # what a step's items are (inject/detect.batch_items): one of two words, as every renderer labels
    # rates with it unescaped ("samples/s"); another value is refused when the file is read
    batch_unit: Union[Literal["tokens", "samples"], None, UnsetType] = UNSET
    batch_shape: Union[list[int], None, UnsetType] = UNSET
    backward_passes_per_step: Union[Num, None, UnsetType] = UNSET
    micro_batches_per_step: Union[Num, None, UnsetType] = UNSET
    profiled_step_time_s: Optional[list[Num]] = None
    profiler_overhead_pct: Union[Num, None, UnsetType] = UNSET
    profiled_step_median_s: Optional[Num] = None
    measured_step_median_s: Optional[Num] = None
    window_costs: Optional[dict[str, Any]] = None
    memory_by_phase: Union[dict[str, Any], None, UnsetType] = UNSET

    def value(self, name: str) -> Any:
        """A field, None where the record has no value (absent or null)."""
        v = getattr(self, name)
        return None if v is UNSET else v
