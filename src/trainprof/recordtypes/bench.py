"""bench.json (`trainprof bench KIND`): the envelope every micro-benchmark shares (schema,
kind, the environment header of mamf-finder's habit, config, results) and each kind's
summary fields. bench/ measures; this is only the shape.

The result rows stay dicts: their columns differ per kind and renderers show them as
generic tables (report/view_bench.py `_columns`). A field only some machines write (`cuda`,
`recorded`) is UNSET when absent, so it is absent from the file as before, not null.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional, Union

import msgspec

from trainprof.recordtypes.base import Block, Num, Record

SCHEMA = "trainprof.bench/1"


class BenchEnv(Block, kw_only=True):
    """Where and with what the numbers were measured (bench/result.environment)."""

    device: str = ""
    device_kind: str = ""
    torch: str = ""
    python: str = ""
    threads: Optional[int] = None
    date: str = ""
    """UTC, ISO 8601, seconds"""
    benchmark_version: Optional[int] = None
    """bumped when a kind's method changes: results of two versions do not compare"""
    others_cpu_share: Optional[Num] = None
    """share of all cores other processes used meanwhile (bench/contention.py)"""
    cuda: Union[Optional[str], msgspec.UnsetType] = msgspec.UNSET
    """CUDA (or HIP) version, on a GPU only"""
    cpu_count: Optional[int] = None


class Bench(Record, kw_only=True):
    """The envelope; a kind's class below adds its summary fields after `results`."""

    schema: str = SCHEMA
    kind: str
    env: BenchEnv = msgspec.field(default_factory=BenchEnv)
    config: dict[str, Any] = {}
    results: list[dict[str, Any]]
    """one row per case measured; the columns are the kind's"""

    VARIANTS: ClassVar[dict[str, type]] = {}  # kind -> its class, filled below (the loader picks by `kind`)


class MatmulBench(Bench, kw_only=True):
    best: dict[str, dict[str, Any]] = {}
    """per dtype: the best row's TFLOP/s, shape and op"""
    skipped_shapes: list[str] = []
    l2_flush_bytes: int = 0
    recorded: Union[dict[str, Any], msgspec.UnsetType] = msgspec.UNSET
    """CPU only: what was stored as this machine's measured peaks, and where"""


class BandwidthBench(Bench, kw_only=True):
    best: dict[str, dict[str, Any]] = {}
    """per test_memory: the row at the largest size"""
    recorded: Union[dict[str, Any], msgspec.UnsetType] = msgspec.UNSET


class CollectivesBench(Bench, kw_only=True):
    world_size: int = 0
    backend: str = ""
    """nccl | gloo"""
    bus_factors: dict[str, Num] = {}
    """busbw = algbw × factor (nccl-tests PERFORMANCE.md)"""
    link: Optional[dict[str, Any]] = None
    """{key, name, gbs (per direction), source, basis}: `--link`'s, else on GPUs the one `nvidia-smi topo -m` and
    the device's row name (backends/gpu_topo.py); each row then has `link_pct` = busbw ÷ gbs"""
    link_note: Optional[str] = None
    """on GPUs without a link: why none was chosen (never a guess)"""


class DataloaderBench(Bench, kw_only=True):
    corpus: dict[str, Any] = {}
    best: dict[str, Any] = {}


class ShapesBench(Bench, kw_only=True):
    best: dict[str, Any] = {}
    """per group: the value ranked first"""


class BatchBench(Bench, kw_only=True):
    """`bench batch`: one row per micro-batch run (jobs/bench_batch.py)."""

    stop: dict[str, Any] = {}
    """why the sweep ended: `by` (plan, oom, max_micro_batch, failed), the micro-batch, the reason"""
    memory_budget_bytes: Optional[int] = None
    """CPU: the budget the planner's limit is under"""
    plan_limit: Optional[int] = None
    """CPU: the planner's largest micro-batch within the budget"""
    best: dict[str, Any] = {}


class ScalingBench(Bench, kw_only=True):
    """`bench scaling`: one row per rank count (jobs/bench_scaling.py, analysis/run/scaling.py)."""

    threads_per_rank: Optional[int] = None
    params: Optional[int] = None
    """the model's parameters (all-reduced bytes per step: 4 × params in fp32 gradients)"""
    failed: Union[dict[str, Any], msgspec.UnsetType] = msgspec.UNSET
    notes: list[str] = []


Bench.VARIANTS.update({"matmul": MatmulBench, "bandwidth": BandwidthBench, "allreduce": CollectivesBench,
                       "dataloader": DataloaderBench, "shapes": ShapesBench, "batch": BatchBench,
                       "scaling": ScalingBench})


def bench_record(doc: dict[str, Any]) -> Bench:
    """The envelope dict (bench/result.envelope) as its kind's Struct, checked."""
    return msgspec.convert(doc, Bench.VARIANTS.get(doc.get("kind"), Bench))
