"""run.json's records: the run, its steps, its device and its summary, as frozen msgspec
Structs (recordtypes/base.py's habit) with their JSON form (`RunRecord.to_dict`, `to_json`,
`run_from_dict`).

What `trainprof run`, `profile`, Monitor and the integrations write, and what the rules and
the reports read (report/loader.py decodes run.json straight into `RunRecord`: a field of the
wrong type is one InputError line naming the file and the field), so a run measured on a GPU
box can be analysed and reported anywhere; the public API (`trainprof.RunRecord`, ...).
Units are in the field names; values are SI (seconds, bytes, FLOPs). Numbers are `Num` (int or
float, as written: JSON does not tell 3 from 3.0, a re-rendered record would). Fields are in the
order the file has always had them; the fields a later trainprof added and older files lack
(`DeviceInfo.peak_measurement`, `Summary.phase_split`, `RunRecord.system`,
`RunRecord.memory_snapshot`, `RunRecord.achievable`, `RunRecord.flowchart`, `RunRecord.layout`,
`StepRecord.pipeline_s`, `Summary.pipeline_s`)
are UNSET when absent, so an old record re-encodes as it was
written (tests/data/reports/cpu_run/run.json); a writer sets them, None where it has nothing.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Union

import msgspec
from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import Num
from trainprof.recordtypes.finding import Finding
from trainprof.recordtypes.flowchart import Flowchart
from trainprof.recordtypes.run_parts import Achievable, Distributed, MemorySnapshot, PeakMeasurement, Profile
from trainprof.recordtypes.system import System, SystemSummary

RUN_SCHEMA = "trainprof.run/1"
PROFILE_FIELDS = ("command", "status", "exit_code", "profile")  # written by `trainprof profile` only


class StepRecord(msgspec.Struct, frozen=True):
    """One optimizer step. Phase times are wall seconds; `other_s` is what no phase covers."""

    step: int
    step_time_s: Num
    data_s: Num
    h2d_s: Num
    forward_s: Num
    backward_s: Num
    optimizer_s: Num
    other_s: Num
    tokens: int
    loss: Optional[Num]
    pipeline_s: Union[Num, UnsetType] = UNSET
    """a pipeline stage's schedule outside its forwards and backwards: waits for the other
    stages, sends, receives (the bubble). Only `run --pp` records it (workload/pipeline.Split)"""


class DeviceInfo(msgspec.Struct, frozen=True):
    """What we chose to read about the device: never raw environment or driver metadata."""

    name: str
    kind: str  # "cpu" | "cuda" | "fake"
    spec_key: str | None  # row of hardware/specs.toml, None when unknown or measured
    peak_dtype: str  # which peak column applies: fp32 | tf32 | bf16 | fp16
    peak_tflops: Optional[Num]  # None → no MFU (unknown device, never a guess)
    peak_source: str  # "datasheet" | "measured" | "user" | "unknown"
    peak_bandwidth_gbs: Optional[Num] = None
    memory_total_bytes: int | None = None
    # a measured CPU peak's provenance (backends/cpu_peak.py): source "measured" | "cached, checked",
    # measured_at, others_cpu_share and load_avg_1m_per_core at measurement, quick check; None otherwise
    peak_measurement: Union[PeakMeasurement, None, UnsetType] = UNSET


class Summary(msgspec.Struct, frozen=True):
    """Run-level metrics over the measured (post-warm-up) steps. `mfu`/`hfu` are fractions."""

    measured_steps: int
    warmup_steps: int
    step_time_s: Num
    step_time_median_s: Num
    data_s: Num
    h2d_s: Num
    forward_s: Num
    backward_s: Num
    optimizer_s: Num
    other_s: Num
    tokens_per_step: int
    tokens_per_s: Num
    flops_per_step: Num
    hardware_flops_per_step: Num
    tflops: Num
    hardware_tflops: Num
    mfu: Optional[Num]
    hfu: Optional[Num]
    peak_memory_bytes: int | None
    peak_memory_kind: str  # "cuda_allocator" | "process_rss" | "unknown"
    loss_first: Optional[Num]
    loss_last: Optional[Num]
    val_loss: Optional[Num] = None
    phase_split: Union[dict[str, dict[str, Any]], None, UnsetType] = UNSET
    """per phase field (data_s, ...): mean_s, mean_share_pct, median_s, median_share_pct,
    outlier_driven (analysis/run/step_split.phase_split); what every report shows of the split"""
    pipeline_s: Union[Num, UnsetType] = UNSET
    """the steps' `pipeline_s` mean, where they have one (`run --pp`)"""


class Layout(msgspec.Struct, frozen=True):
    """How the run's ranks were laid out (`run --dp/--tp/--pp`, workload/layout_flags.py):
    dp × tp × pp = world_size. A DDP/FSDP job is dp = world_size, tp = pp = 1."""

    dp: int
    """data-parallel replicas"""
    tp: int
    """tensor-parallel ranks per replica"""
    pp: int
    """pipeline stages per replica"""
    strategy: str
    """--strategy as given: ddp | fsdp over every rank when tp = pp = 1 and --dp unset; with --dp/--tp/--pp
    or tp | pp, a DeviceMesh layout (plain data parallel on its dp axis)"""
    schedule: Optional[str] = None
    """pipeline schedule (gpipe | 1f1b); None without stages"""
    microbatches: Optional[int] = None
    """pipeline micro-batches per step (m); None without stages"""


class RunRecord(msgspec.Struct, frozen=True):
    device: DeviceInfo
    model: dict[str, Any]
    config: dict[str, Any]
    steps: list[StepRecord]
    summary: Summary
    world_size: int = 1
    flops: dict[str, Any] = {}
    environment: dict[str, Any] = {}
    warnings: list[str] = []
    findings: list[Finding] = []
    distributed: Optional[Distributed] = None
    system: Union[System, None, UnsetType] = UNSET  # sampled CPU/GPU/power (recordtypes/system.py)
    # run --memory-snapshot (collect/memory_snapshot.py)
    memory_snapshot: Union[MemorySnapshot, None, UnsetType] = UNSET
    # the measured matmul ceiling MFU is put against (backends/ceiling.py, docs/metrics.md "% of
    # achievable"): {"tflops", "dtype", "measured_at", "source"} or {"tflops": None, "why"}; GPU runs
    achievable: Union[Achievable, None, UnsetType] = UNSET
    # seed 002's flowchart path, computed once from this record and its trace analysis
    # (diagnose/flowchart.py); the reports lay it out as stored
    flowchart: Union[Flowchart, None, UnsetType] = UNSET
    # the ranks' layout (a job of `run --nproc`; None: one process)
    layout: Union[Layout, None, UnsetType] = UNSET
    # `trainprof profile` (docs/profile.md): the user's command, how it ended, how steps were found
    command: list[str] | None = None
    status: str | None = None  # running | completed | stopped | crashed | interrupted
    exit_code: int | None = None  # the program's; -N: killed by signal N
    profile: Optional[Profile] = None
    schema: str = RUN_SCHEMA

    @property
    def batch_unit(self) -> str:
        """What `summary.tokens_per_s` counts: "tokens", or "samples" for a `profile` of a model
        fed features (profile.batch_unit); every renderer labels the rate with this one word."""
        return (self.profile.batch_unit if self.profile is not None else None) or "tokens"  # UNSET is falsy

    @property
    def system_summary(self) -> Optional[SystemSummary]:
        """The sampled host/GPU summary; None without samples (an older record: UNSET, or
        `--system-interval 0`: null)."""
        return self.system.summary if isinstance(self.system, System) else None

    def to_dict(self) -> dict[str, Any]:
        """The record as run.json holds it (plain dicts and lists, fields in order, UNSET ones
        left out), `schema` first."""
        from trainprof.jsontext import encode_hook

        d = msgspec.to_builtins(self, enc_hook=encode_hook)
        if self.command is None:  # not a `trainprof profile` record: run.json stays as `run` writes it
            for k in PROFILE_FIELDS:
                del d[k]
        # Put the schema first so a reader can dispatch on the opening bytes.
        return {"schema": d.pop("schema"), **d}

    def to_json(self) -> str:
        """run.json's text: json.dumps's (its float format, 1e+16, as run.json has always had;
        msgspec would write 1e16), NaN/Infinity as null."""
        from trainprof.jsontext import finite

        return json.dumps(finite(self.to_dict()), indent=2, sort_keys=False) + "\n"


def run_from_dict(d: dict[str, Any]) -> RunRecord:
    """Inverse of `RunRecord.to_dict` (for `profile`'s per-rank files and tests): a ValueError
    (msgspec.ValidationError) naming the field where `d` does not fit."""
    if d.get("schema") != RUN_SCHEMA:
        raise ValueError(f"not a {RUN_SCHEMA} record (schema={d.get('schema')!r})")
    return msgspec.convert(d, RunRecord)


def load_run(path: Any) -> RunRecord:
    """run.json in `path` as a RunRecord, read with every bound of bounded.py (recordtypes/base.load):
    a file that is not one is one InputError line naming it and the field, exit code 2."""
    from trainprof.recordtypes.base import load

    return load(path, RunRecord)
