"""Edits that plant a known answer into a real Kineto trace (the JSON events themselves).

* `shift_gpu(events, d)`: the GPU lanes' clock moves by d µs (an offset of +d).
* `insert_call(events, ...)`: a host call of `dur` µs at `ts` on one thread; the run pauses
  there: every event from `ts` on happens `dur` later, an event open across `ts` ends `dur`
  later, GPU work launched before `ts` (already queued) keeps its time.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

REAL = Path(__file__).resolve().parents[2] / "data" / "traces" / "real"
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_sync", "memcpy", "memset"}
HOST_CALL_CATS = {"cuda_runtime", "cuda_driver", "hip_runtime", "hip_driver", "runtime"}


def load(rel: str) -> dict:
    with gzip.open(REAL / rel, "rt") as f:
        return json.load(f)


def save(doc: dict, path: Path) -> Path:
    path.write_text(json.dumps(doc))
    return path


def complete(doc: dict) -> list[dict]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def corr(e: dict):
    return (e.get("args") or {}).get("correlation")


def shift_gpu(doc: dict, d: float) -> dict:
    for e in doc["traceEvents"]:
        if e.get("cat") in GPU_CATS and "ts" in e:
            e["ts"] += d
    return doc


def insert_call(doc: dict, *, pid, tid, ts: float, dur: float, name: str, cat: str = "cuda_runtime",
                args: dict | None = None) -> dict:
    calls = {corr(e): e["ts"] for e in complete(doc) if e.get("cat") in HOST_CALL_CATS and corr(e) is not None}
    for e in doc["traceEvents"]:
        if "ts" not in e:
            continue
        if e.get("cat") in GPU_CATS:
            launched = calls.get(corr(e))
            if (launched if launched is not None else e["ts"]) >= ts:
                e["ts"] += dur
        elif e["ts"] >= ts:
            e["ts"] += dur
        elif e.get("ph") == "X" and e["ts"] + e.get("dur", 0) > ts:
            e["dur"] += dur
    doc["traceEvents"].append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                               "args": dict(args or {})})
    return doc
