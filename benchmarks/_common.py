"""Shared benchmark plumbing: an environment header for every result (mamf-finder's habit)."""

from __future__ import annotations

import datetime as dt
import json
import platform
from pathlib import Path
from typing import Any


def environment(device: str) -> dict[str, Any]:
    import torch

    from trainprof.backends import get_backend

    return {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "device": get_backend(device).device_name(),
        "device_kind": device,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
    }


def write_json(path: str, payload: dict[str, Any]) -> None:
    from trainprof import atomic

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(payload, indent=2) + "\n")
