"""diff.json (`trainprof diff BASE NEW`, and a study's diff stage): two analysed traces
compared per step. analysis/job/diff.py computes it and says how each figure is divided.

Only `step_time_us` is required, as report/schemas.py required before the record was
typed: an older or hand-trimmed diff.json still renders.
"""

from __future__ import annotations

from typing import Optional

import msgspec

from trainprof.recordtypes.base import Block, Num, Record

SCHEMA = "trainprof.diff/1"


class Side(Block, kw_only=True):
    """One of the two traces."""

    file: str
    device_name: Optional[str] = None
    steps: Optional[int] = None
    gpu_steps: Optional[int] = None
    """steps that launched GPU work (the divisor of the per-step figures)"""
    has_gpu: Optional[bool] = None
    """the trace holds GPU activity (None: a diff.json from before it was recorded)"""


class StepTime(Block, kw_only=True):
    base: Optional[Num] = None
    new: Optional[Num] = None
    speedup: Optional[Num] = None
    """base / new: > 1 is faster"""
    change_pct: Optional[Num] = None
    source: Optional[str] = None
    """median GPU step span, or on a CPU trace the mean host time of the profiler steps"""


class Pair(Block, kw_only=True):
    """One figure per step, before and after (µs)."""

    base_us_per_step: Num
    new_us_per_step: Num
    delta_us_per_step: Num


class FindingDelta(Block, kw_only=True):
    id: str
    title: Optional[str] = None
    status: str
    """appeared | disappeared | changed | unchanged"""
    base_gain_pct: Optional[Num] = None
    new_gain_pct: Optional[Num] = None


class Row(Block, kw_only=True):
    """An operator or kernel name, per step on both sides."""

    name: str
    base_us_per_step: Num
    new_us_per_step: Num
    delta_us_per_step: Num
    change_pct: Optional[Num] = None
    """None when the base is 0 or too small for a percentage to mean anything (`small_base`)"""
    small_base: bool = False
    """the base is under 1% of the step or 10 µs (analysis/job/diff.py): no percentage shown"""
    status: str
    """added | removed | changed"""
    kind: Optional[str] = msgspec.field(default=None, name="class")
    """the kernel class (trace/classify.py); "class" in the file"""


class Changes(Block, kw_only=True):
    metric: Optional[str] = None
    """operators: gpu (their kernels' GPU time) | self_cpu (a CPU-only trace); None for kernels"""
    top: list[Row] = []
    """the biggest absolute changes first"""
    added: list[str] = []
    removed: list[str] = []
    n_added: int = 0
    n_removed: int = 0


class Diff(Record, kw_only=True):
    schema: str = SCHEMA
    base: Optional[Side] = None
    new: Optional[Side] = None
    step_time_us: StepTime
    temporal_breakdown: dict[str, Pair] = {}
    """compute, communication, memcpy, memset, sync, idle"""
    idle_causes: dict[str, Pair] = {}
    findings: list[FindingDelta] = []
    ops: Changes = msgspec.field(default_factory=Changes)
    kernels: Changes = msgspec.field(default_factory=Changes)
    story: list[str] = []
    """the changes that matter, in words, biggest first"""
