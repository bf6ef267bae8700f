"""The bench.json envelope: schema, kind, environment header (mamf-finder's habit), config,
results; written atomically so a reader never sees half a file."""

from __future__ import annotations

import datetime as dt
import os
import platform
from pathlib import Path
from typing import Any

from trainprof import atomic, jsontext
from trainprof.backends import DeviceBackend
from trainprof.recordtypes.bench import SCHEMA, Bench, bench_record


def environment(backend: DeviceBackend, version: int, others_cpu_share: float | None = None) -> dict[str, Any]:
    """The header of every result; `others_cpu_share`: contention.py."""
    import torch

    env = {
        "device": backend.device_name(),
        "device_kind": backend.kind,
        "torch": str(torch.__version__),  # a TorchVersion (str subclass) msgspec does not encode
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "benchmark_version": version,
        "others_cpu_share": others_cpu_share,
    }
    if backend.kind == "cuda":
        env["cuda"] = torch.version.cuda or torch.version.hip
    env["cpu_count"] = os.cpu_count()
    return env


def envelope(kind: str, env: dict[str, Any], config: dict[str, Any], payload: dict[str, Any]) -> Bench:
    """{"schema", "kind", "env", "config", "results", ...the kind's summary fields}, typed
    (recordtypes/bench.py: the kind's Struct)."""
    return bench_record({"schema": SCHEMA, "kind": kind, "env": env, "config": config, **payload})


def write(out_dir: str | Path, record: Bench) -> Path:
    path = Path(out_dir) / "bench.json"
    atomic.write_text(path, jsontext.dumps(record) + "\n")
    return path
