"""A whole run.json record (recordtypes/run.RunRecord) from the few fields a rule test sets:
the rules read a typed record, so a test states only what it plants and the rest is filled
with values no rule fires on (no memory figures, no MFU, no per-step rows unless given)."""

from __future__ import annotations

from typing import Any

import msgspec

from trainprof.recordtypes.run import DeviceInfo, RunRecord, StepRecord, Summary
from trainprof.recordtypes.run_parts import Achievable, Distributed, MemorySnapshot, Profile
from trainprof.recordtypes.system import System

BLOCKS = {"profile": Profile, "achievable": Achievable, "distributed": Distributed, "memory_snapshot": MemorySnapshot}

PHASE_FIELDS = ("data_s", "h2d_s", "forward_s", "backward_s", "optimizer_s", "other_s")


def step_record(d: dict[str, Any]) -> StepRecord:
    return StepRecord(**{"tokens": 64, "loss": None, **d})


def system_block(system: dict[str, Any]) -> System:
    """run.json's "system" block from the part a test plants (`{"summary": {"gpus": [...]}}`,
    or summarise_system's whole dict), the fields it leaves out empty: no samples, no readings."""
    summary = {"n_samples": 0, "duration_s": 0.0, "cpu_util_pct": None, "rss_bytes_max": None,
               "children_rss_bytes_max": None, "gpus": [], "energy": {"window_s": 0.0, "steps": 0, "tokens": 0},
               **system.get("summary", {})}
    return msgspec.convert({"interval_s": 1.0, "samples": [], "unavailable": {}, "errors": {}, **system,
                            "summary": summary}, System)


def run_record(summary: dict[str, Any], steps: list[dict[str, Any]] | None = None,
               device: dict[str, Any] | None = None, config: dict[str, Any] | None = None, **extra: Any) -> RunRecord:
    s: dict[str, Any] = dict(measured_steps=1, warmup_steps=0, step_time_s=1.0, step_time_median_s=1.0,
                             **{p: 0.0 for p in PHASE_FIELDS}, tokens_per_step=64, tokens_per_s=64.0, flops_per_step=0,
                             hardware_flops_per_step=0, tflops=0.0, hardware_tflops=0.0, mfu=None, hfu=None,
                             peak_memory_bytes=None, peak_memory_kind="unknown", loss_first=None, loss_last=None)
    s.update(summary)
    if isinstance(extra.get("system"), dict):
        extra["system"] = system_block(extra["system"])
    for k, cls in BLOCKS.items():  # the other blocks as a test plants them: a dict of the fields it needs
        if isinstance(extra.get(k), dict):
            extra[k] = msgspec.convert(extra[k], cls)
    dev = DeviceInfo(**{"name": "test", "kind": "cpu", "spec_key": None, "peak_dtype": "fp32", "peak_tflops": None,
                        "peak_source": "unknown", **(device or {})})
    return RunRecord(device=dev, model={}, config=config or {}, steps=[step_record(x) for x in steps or []],
                     summary=Summary(**s), **extra)
