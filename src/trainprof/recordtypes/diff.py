"""diff.json (`trainprof diff BASE NEW`, and a study's diff stage): two analysed traces
compared per step, and for two run folders their measured steps (run.json) compared with a
noise test. analysis/job/diff.py computes the trace part and says how each figure is divided;
analysis/run/compare.py the runs' part and the verdict.

Only `step_time_us` is required, as report/schemas.py required before the record was
typed: an older or hand-trimmed diff.json still renders.
"""

from __future__ import annotations

from typing import Optional

import msgspec

from trainprof.recordtypes.base import Block, Num, Record

SCHEMA = "trainprof.diff/1"


class Side(Block, kw_only=True):
    """One of the two sides: its trace and, for a run folder, the folder."""

    file: Optional[str] = None
    """the trace compared (None: the side has none, a run folder of run.json only)"""
    device_name: Optional[str] = None
    steps: Optional[int] = None
    """profiler steps in the trace"""
    gpu_steps: Optional[int] = None
    """steps that launched GPU work (the divisor of the per-step figures); None on a CPU trace"""
    has_gpu: Optional[bool] = None
    """the trace holds GPU activity (None: a diff.json from before it was recorded)"""
    folder: Optional[str] = None
    """the run folder given (None: a trace file was given)"""
    traces: Optional[int] = None
    """trace files the run folder holds (0: run.json only; several ranks: rank 0's is compared)"""


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
    """the finding's `estimated_gain_pct` (its bound) as the side's own analysis holds it"""
    new_gain_pct: Optional[Num] = None
    base_projected_pct: Optional[Num] = None
    """the finding's `projected_gain_pct` (the what-if's), where it has one"""
    new_projected_pct: Optional[Num] = None


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


class Verdict(Block, kw_only=True):
    """The headline: is NEW faster than BASE beyond the noise (analysis/run/noise.py)."""

    call: str
    """faster | slower | noise | untested"""
    per: str
    """step | token | sample: what each step's time is divided by (per step when both steps hold the same work)"""
    ratio: Optional[Num] = None
    """median BASE time per `per` ÷ median NEW: > 1 is faster (per token/sample: the throughput ratio)"""
    ci_low: Optional[Num] = None
    ci_high: Optional[Num] = None
    fast_ratio: Optional[Num] = None
    """the same ratio of the 10th percentiles: the fast steps, those no other process delayed"""
    fast_ci_low: Optional[Num] = None
    fast_ci_high: Optional[Num] = None
    confidence: Optional[Num] = None
    """of the intervals (bootstrap, each run's measured steps resampled)"""
    band: Optional[Num] = None
    """run-to-run drift the two runs' load allows (a fraction): faster only if fast_ci_low and
    ratio > 1 + band, slower only if fast_ci_high and ratio < 1/(1 + band) (analysis/run/noise.py)"""
    why: str
    """the reasons in words: the unit, the machine load, or why there is no test"""


class RunSide(Block, kw_only=True):
    """One run's measured steps (run.json), as the verdict reads them."""

    run: str
    """the run.json read"""
    steps: int
    """measured steps (after warm-up)"""
    step_median_s: Num
    unit: str
    """tokens | samples (`profile.batch_unit`; `trainprof run` counts tokens)"""
    units_per_step: Num
    """run.json `summary.tokens_per_step` (tokens or samples)"""
    units_per_s: Optional[Num] = None
    """1 / the median time per unit over the measured steps"""
    load: Optional[list[str]] = None
    """signs that the machine was shared (analysis/run/step_split.contention); None: the load was not recorded"""
    others_cpu_pct: Optional[Num] = None
    """mean share of all cores' time other processes took while it measured (run.json `system`)"""


class Runs(Block, kw_only=True):
    """The two run.json records compared: the step split and what the verdict read."""

    base: RunSide
    new: RunSide
    split: dict[str, Pair] = {}
    """data_s, h2d_s, forward_s, backward_s, optimizer_s, other_s (and pipeline_s where either
    run has it: `run --pp`): run.json `summary.<phase>` (the mean over the measured steps, the
    figure the run's report shows) in µs per step"""


class Diff(Record, kw_only=True):
    schema: str = SCHEMA
    base: Optional[Side] = None
    new: Optional[Side] = None
    verdict: Optional[Verdict] = None
    """the headline (None: a diff.json from before it was recorded)"""
    runs: Optional[Runs] = None
    """both sides are run folders: their measured steps (None: a side without run.json)"""
    step_time_us: StepTime
    """the traces' step times (all None when a side has no trace)"""
    temporal_breakdown: dict[str, Pair] = {}
    """compute, communication, memcpy, memset, sync, idle"""
    idle_causes: dict[str, Pair] = {}
    findings: list[FindingDelta] = []
    ops: Changes = msgspec.field(default_factory=Changes)
    kernels: Changes = msgspec.field(default_factory=Changes)
    story: list[str] = []
    """the changes that matter, in words, biggest first"""
