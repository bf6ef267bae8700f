"""The measured matmul ceiling of a GPU (`bench matmul`'s best dense TFLOP/s per dtype), cached
per device and dtype: the "achievable" that MFU is put against (docs/metrics.md, "% of
achievable"). On a CPU the device peak is already a measured matmul (backends/cpu_peak.py).

The rule (seed 001: "know the achievable TFLOPS, optimise until close, then stop"):
* measured only by `trainprof bench matmul` on that GPU — never implicitly by `run`, `profile`
  or `analyze`: the sweep takes minutes of the device (H200: ~2 min for the default shapes);
* read by `run` into run.json's `achievable` block, with its date and torch version;
* stale after MAX_AGE_DAYS or under another torch version (a different cuBLAS picks different
  kernels): then not used, and the record says to re-run `trainprof bench matmul`.

File: `$TRAINPROF_CACHE_DIR/matmul_ceiling.json` (default ~/.cache/trainprof), schema VERSION.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

from trainprof import atomic
from trainprof.backends.cpu_peak import cache_dir

VERSION = 1
MAX_AGE_DAYS = 90.0  # drivers and clocks drift; a quarter-old ceiling is measured again


def cache_path() -> Path:
    return cache_dir() / "matmul_ceiling.json"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == VERSION else {}


def record(device: str, dtype: str, tflops: float, torch_version: str, *, now: str | None = None,
           path: Path | None = None) -> Path | None:
    """Store a sweep's best TFLOP/s for (device, dtype); None if the cache is not writable."""
    if not tflops > 0:
        raise ValueError(f"ceiling must be > 0, got {tflops}")
    path = path or cache_path()
    data = _read(path) or {"version": VERSION, "entries": {}}
    data.setdefault("entries", {})[f"{device}|{dtype}"] = {
        "tflops": float(tflops), "measured_at": now or _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "torch": torch_version}
    try:
        atomic.write_text(path, json.dumps(data, indent=1))
    except OSError:
        return None
    return path


def lookup(device: str, dtype: str, torch_version: str, *, now: str | None = None,
           path: Path | None = None) -> dict[str, Any]:
    """run.json's `achievable` block: {"tflops", "dtype", "measured_at", "source"} when a fresh
    ceiling is cached, else {"tflops": None, "why": ...} (never measured here)."""
    e = _read(path or cache_path()).get("entries", {}).get(f"{device}|{dtype}")
    if not e:
        return {"tflops": None, "dtype": dtype,
                "why": f"no measured {dtype} ceiling for {device}: run `trainprof bench matmul` on it once"}
    try:
        t = _dt.datetime.fromisoformat(now) if now else _dt.datetime.now(_dt.timezone.utc)
        age = (t - _dt.datetime.fromisoformat(e["measured_at"])).total_seconds() / 86400
    except (KeyError, TypeError, ValueError):
        age = float("inf")
    if age > MAX_AGE_DAYS or e.get("torch") != torch_version:
        return {"tflops": None, "dtype": dtype,
                "why": f"the cached {dtype} ceiling ({e.get('tflops')} TFLOP/s, {e.get('measured_at')}, torch "
                       f"{e.get('torch')}) is stale: re-run `trainprof bench matmul`"}
    return {"tflops": float(e["tflops"]), "dtype": dtype, "measured_at": e["measured_at"],
            "source": "trainprof bench matmul (best dense TFLOP/s, cached)"}
