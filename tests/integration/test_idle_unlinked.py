"""Planted: GPU work whose launch the trace lacks runs, so it is not idle time.

HTA's row selection drops a kernel without a launch in the trace and counts the time it ran
as idle. We keep every row inside HTA's window (analysis/timeline/context.py) and carry HTA's
idle beside ours. Planted on the A100 DDP trace (nccl_data): the launch link of some kernels
is cut (their correlation id points at no launch), nothing else changes.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from trainprof.analysis.timeline import intervals as iv
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.timeline.idle import idle_breakdown
from trainprof.analysis.timeline.temporal import temporal_breakdown
from trainprof.trace import read_trace

REAL = Path(__file__).resolve().parents[1] / "data" / "traces" / "real"
TRACE = REAL / "hta_ddp_2rank_nccl_a100" / "nccl_data.json.gz"


def _lonely_kernels(doc: dict, n: int) -> list[dict]:
    """n kernels from the middle of the trace that overlap no other GPU activity: the time each
    runs is busy for us and idle for HTA, by exactly its duration."""
    gpu = sorted((e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy",
                                                                                          "gpu_memset")),
                 key=lambda e: e["ts"])
    out = []
    for i in range(len(gpu) // 3, len(gpu) - 1):
        e, after = gpu[i], gpu[i + 1]
        reach = max(g["ts"] + g["dur"] for g in gpu[:i])
        if e["cat"] == "kernel" and e["dur"] > 0 and reach < e["ts"] and e["ts"] + e["dur"] < after["ts"]:
            out.append(e)
            if len(out) == n:
                return out
    raise AssertionError("the trace has too few isolated kernels for the plant")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Context, Context, float]:
    doc = json.loads(gzip.open(TRACE, "rt").read())
    original = Context.build(read_trace(TRACE))
    lonely = _lonely_kernels(doc, 5)
    for k, e in enumerate(lonely):
        e["args"]["correlation"] = 10**9 + k  # no launch carries this id: HTA drops the kernel
        e["args"].pop("External id", None)
    path = tmp_path_factory.mktemp("unlinked") / "rank0.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return original, Context.build(read_trace(path)), float(sum(e["dur"] for e in lonely))


def test_unlinked_kernels_stay_busy_and_hta_idle_counts_them(planted):
    original, cut, dur_us = planted
    assert len(cut.timeline_hta) == len(original.timeline_hta) - 5  # HTA's selection lost the 5
    assert len(cut.timeline) == len(original.timeline)  # ours kept them
    before, after = temporal_breakdown(original), temporal_breakdown(cut)
    # the GPU did the same work: same span, same idle, same parts
    assert after.span_us == before.span_us and after.idle_us == pytest.approx(before.idle_us, abs=1e-6)
    assert after.compute_us + after.communication_us == pytest.approx(before.compute_us + before.communication_us)
    # HTA's idle = ours + the 5 kernels' time, each overlapping nothing (sum of their durations)
    assert after.hta_idle_us == pytest.approx(before.idle_us + dur_us, abs=1e-3)  # 1 ns: float64 sums of µs
    assert before.hta_idle_us == before.idle_us  # nothing dropped in the original
    # HTA's own figures, from HTA's rows alone, call those kernels idle too
    assert temporal_breakdown(cut, hta=True).idle_us == pytest.approx(after.hta_idle_us, abs=1e-6)


def test_idle_causes_cover_the_same_idle(planted):
    original, cut, _ = planted
    a, b = idle_breakdown(original), idle_breakdown(cut)
    assert b.idle_us == pytest.approx(a.idle_us, abs=1e-6) and b.gaps == a.gaps
    assert b.idle_us == pytest.approx(temporal_breakdown(cut).idle_us, abs=1e-6)  # one idle, one window


def test_window_is_htas(planted):
    original, cut, _ = planted
    assert cut.window == original.window
    s, e = cut.spans(cut.timeline)
    lo, hi = cut.window
    assert iv.length(*iv.clip(s, e, lo, hi)) <= hi - lo and np.all((e > lo) & (s < hi))
