"""memory.json (`trainprof memory`): the analytic memory breakdown beside measured peaks,
the largest micro-batch that fits, and the memory ladder (docs/memory.md).
jobs/memory_study.py writes it; every measurement is a probe (a few real training steps in
a fresh process).

The analytic `breakdown` stays the dict analysis/run/memory.breakdown returns (its terms are
documented there, with their formulas); `config` holds TrainConfig fields by name. A ladder
rung that was not run has no measurements: those fields are UNSET there (absent, as before).
"""

from __future__ import annotations

from typing import Any, Optional, Union

import msgspec
from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import Block, Num, Record

SCHEMA = "trainprof.memory/1"


class MemoryModel(Block, kw_only=True):
    preset: Optional[str] = None
    params: Optional[int] = None
    n_layer: Optional[int] = None
    n_head: Optional[int] = None
    d_model: Optional[int] = None
    vocab_size: Optional[int] = None
    context_len: Optional[int] = None


class MemoryDevice(Block, kw_only=True):
    kind: str = ""
    name: Optional[str] = None
    memory_limit_bytes: Optional[int] = None
    limit_source: Optional[str] = None
    memory_total_bytes: Optional[int] = None
    available_bytes: Optional[int] = None
    peak_kind: Optional[str] = None
    """what "peak" measured: cuda_allocator | process_hwm | ..."""
    cpu_malloc: Union[Optional[str], UnsetType] = UNSET
    """the C allocator of a CPU probe (absent in records from before it was recorded)"""


class Probe(Block, kw_only=True):
    """One micro-batch tried by the search."""

    micro_batch: int
    status: str
    fits: Optional[bool] = None
    measured_peak_bytes: Optional[int] = None
    measured_above_baseline_bytes: Optional[int] = None
    reason: Optional[str] = None
    wall_s: Optional[Num] = None
    cpu_s: Optional[Num] = None


class Search(Block, kw_only=True):
    """The largest micro-batch that fits the limit: doubling, then bracketing."""

    seq_len: Optional[int] = None
    limit_bytes: Optional[int] = None
    max_micro_batch: Optional[int] = None
    stopped: str = ""
    """bracketed | nothing fits | cap"""
    method: str = ""
    fit: Optional[dict[str, Any]] = None
    """peak = fixed + per_sample · micro-batch, least squares over the upper half"""
    analytic_per_sample_bytes: Optional[int] = None
    probes: list[Probe] = []


class Rung(Block, kw_only=True):
    """One step of the memory ladder (each on top of the previous)."""

    step: str
    change: str = ""
    note: str = ""
    config: Optional[dict[str, Any]] = None
    status: str = ""
    """ok | oom | error | not run"""
    reason: Union[Optional[str], UnsetType] = UNSET
    measured_peak_bytes: Optional[int] = None
    measured_above_baseline_bytes: Optional[int] = None
    analytic_peak_bytes: Optional[int] = None
    """analysis/run/memory.py's breakdown (one rank of AdamW); None where it has no model"""
    ranks: Union[int, UnsetType] = UNSET
    """processes the rung ran on; the peaks are per rank (the highest rank's)"""
    ranks_above_baseline_bytes: Union[Optional[list[Optional[int]]], UnsetType] = UNSET
    planned_peak_bytes: Union[Optional[int], UnsetType] = UNSET
    """`trainprof plan`'s estimate for the same layout (analysis/plan; jobs/plan_check.py)"""
    planned_device: Union[Optional[str], UnsetType] = UNSET
    """cpu or cuda: the device planned for (a rung not run is planned for a GPU)"""
    fits_limit: Union[Optional[bool], UnsetType] = UNSET
    step_time_s: Optional[Num] = None
    wall_s: Union[Optional[Num], UnsetType] = UNSET
    cpu_s: Union[Optional[Num], UnsetType] = UNSET


class ProbeCost(Block, kw_only=True):
    count: int = 0
    wall_s: Num = 0.0
    cpu_s: Num = 0.0


class Memory(Record, kw_only=True):
    schema: str = SCHEMA
    model: MemoryModel = msgspec.field(default_factory=MemoryModel)
    config: dict[str, Any] = {}
    device: MemoryDevice = msgspec.field(default_factory=MemoryDevice)
    params_bytes: Optional[int] = None
    grads_bytes: Optional[int] = None
    optimizer_bytes: Optional[int] = None
    activations_bytes: Optional[int] = None
    logits_bytes: Optional[int] = None
    analytic_peak_bytes: Optional[int] = None
    measured_peak_bytes: Optional[int] = None
    measured_above_baseline_bytes: Optional[int] = None
    baseline_bytes: Optional[int] = None
    """what the process held before the model existed (interpreter, libraries)"""
    measured_over_analytic: Optional[Num] = None
    max_micro_batch: Optional[int] = None
    breakdown: dict[str, Any] = {}
    search: Optional[Search] = None
    ladder: list[Rung] = []
    probes: Union[ProbeCost, UnsetType] = UNSET
    """what the probes cost (absent in records from before it was recorded)"""
    environment: dict[str, Any] = {}
