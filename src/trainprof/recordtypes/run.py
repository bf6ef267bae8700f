"""run.json's records: the run, its steps, its device and its summary, as plain frozen
dataclasses with their JSON form (`RunRecord.to_dict`, `run_from_dict`).

What `trainprof run`, `profile`, Monitor and the integrations write, and what the rules and
the reports read, so a run measured on a GPU box can be analysed and reported anywhere; the
public API (`trainprof.RunRecord`, ...). Units are in the field names; values are SI
(seconds, bytes, FLOPs). The other saved records are msgspec Structs beside this file.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

RUN_SCHEMA = "trainprof.run/1"
PROFILE_FIELDS = ("command", "status", "exit_code", "profile")  # written by `trainprof profile` only


@dataclass(frozen=True)
class StepRecord:
    """One optimizer step. Phase times are wall seconds; `other_s` is what no phase covers."""

    step: int
    step_time_s: float
    data_s: float
    h2d_s: float
    forward_s: float
    backward_s: float
    optimizer_s: float
    other_s: float
    tokens: int
    loss: float | None


@dataclass(frozen=True)
class DeviceInfo:
    """What we chose to read about the device: never raw environment or driver metadata."""

    name: str
    kind: str  # "cpu" | "cuda" | "fake"
    spec_key: str | None  # row of hardware/specs.toml, None when unknown or measured
    peak_dtype: str  # which peak column applies: fp32 | tf32 | bf16 | fp16
    peak_tflops: float | None  # None → no MFU (unknown device, never a guess)
    peak_source: str  # "datasheet" | "measured" | "user" | "unknown"
    peak_bandwidth_gbs: float | None = None
    memory_total_bytes: int | None = None
    # a measured CPU peak's provenance (backends/cpu_peak.py): source "measured" | "cached, checked",
    # measured_at, others_cpu_share and load_avg_1m_per_core at measurement, quick check; None otherwise
    peak_measurement: dict[str, Any] | None = None


@dataclass(frozen=True)
class Summary:
    """Run-level metrics over the measured (post-warm-up) steps. `mfu`/`hfu` are fractions."""

    measured_steps: int
    warmup_steps: int
    step_time_s: float
    step_time_median_s: float
    data_s: float
    h2d_s: float
    forward_s: float
    backward_s: float
    optimizer_s: float
    other_s: float
    tokens_per_step: int
    tokens_per_s: float
    flops_per_step: float
    hardware_flops_per_step: float
    tflops: float
    hardware_tflops: float
    mfu: float | None
    hfu: float | None
    peak_memory_bytes: int | None
    peak_memory_kind: str  # "cuda_allocator" | "process_rss" | "unknown"
    loss_first: float | None
    loss_last: float | None
    val_loss: float | None = None
    phase_split: dict[str, dict[str, Any]] | None = None
    """per phase field (data_s, ...): mean_s, mean_share_pct, median_s, median_share_pct,
    outlier_driven (analysis/run/step_split.phase_split); what every report shows of the split"""


@dataclass(frozen=True)
class RunRecord:
    device: DeviceInfo
    model: dict[str, Any]
    config: dict[str, Any]
    steps: list[StepRecord]
    summary: Summary
    world_size: int = 1
    flops: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    distributed: dict[str, Any] | None = None
    system: dict[str, Any] | None = None  # sampled CPU/GPU/power (analysis/run/system.py)
    memory_snapshot: dict[str, Any] | None = None  # run --memory-snapshot (collect/memory_snapshot.py)
    # `trainprof profile` (docs/profile.md): the user's command, how it ended, how steps were found
    command: list[str] | None = None
    status: str | None = None  # running | completed | stopped | crashed | interrupted
    exit_code: int | None = None  # the program's; -N: killed by signal N
    profile: dict[str, Any] | None = None
    schema: str = RUN_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.command is None:  # not a `trainprof profile` record: run.json stays as `run` writes it
            for k in PROFILE_FIELDS:
                del d[k]
        # Put the schema first so a reader can dispatch on the opening bytes.
        return {"schema": d.pop("schema"), **d}

    def to_json(self) -> str:
        return json.dumps(_finite(self.to_dict()), indent=2, sort_keys=False) + "\n"


def _finite(obj: Any) -> Any:
    """JSON has no NaN/Infinity: map them to null instead of emitting invalid JSON."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def run_from_dict(d: dict[str, Any]) -> RunRecord:
    """Inverse of `RunRecord.to_dict` (for `report`, `diff` and tests)."""
    if d.get("schema") != RUN_SCHEMA:
        raise ValueError(f"not a {RUN_SCHEMA} record (schema={d.get('schema')!r})")
    return RunRecord(
        device=DeviceInfo(**d["device"]),
        model=d["model"],
        config=d["config"],
        steps=[StepRecord(**s) for s in d["steps"]],
        summary=Summary(**d["summary"]),
        world_size=d.get("world_size", 1),
        flops=d.get("flops", {}),
        environment=d.get("environment", {}),
        warnings=d.get("warnings", []),
        findings=d.get("findings", []),
        distributed=d.get("distributed"),
        system=d.get("system"),
        memory_snapshot=d.get("memory_snapshot"),
        **{k: d.get(k) for k in PROFILE_FIELDS},
    )
