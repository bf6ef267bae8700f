"""Issue #39 item 8, planted: tiny cast kernels and a redundant copy.

Base: HTA's step_based trace (GP100, 5 iterations, host-bound; its own tiny kernels are 30
fills from zero_grad and ones_like, no casts). Planted at host-launch gaps, where the GPU is
idle and the host is the critical path: an `aten::to > aten::_to_copy > aten::copy_` of
30 µs launching one 15 µs copy kernel, 3 per step (15 in all), under a Python frame
`train.py(42): forward`; and once, `aten::clone` of a [64, 64] float tensor followed by an
`aten::mm` of two [64, 64] floats (the copy fed with its own source). The right answers are
known before the code runs: 3.0 casts per step from that call site, one redundant copy, and
a what-if that gives back at least the planted host time. Plus CPU-only traces by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.plain import plain
from tests.unit.analysis.planting import complete, insert_call, load, save
from trainprof.analysis import trace_report
from trainprof.diagnose.engine import diagnose_rank
from trainprof.trace import read_trace

STEPS = "hta_small_edge_cases/step_based_trace_2543932.json.gz"
CAST_US, CAST_KERNEL_US = 30.0, 15.0
COPY_KERNEL = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)>"


def _analyze(doc: dict, path: Path) -> dict:
    return plain(trace_report.analyze_trace(read_trace(save(doc, path)), file=path.name))


def _gaps(doc: dict, a: dict) -> list[tuple[float, dict]]:
    """Host-launch gaps: (the launch time L of the work that ends the gap, that launch call),
    longest first. At L the GPU is idle and the host is what it waits for."""
    iv = a["idle_breakdown"]["intervals"]
    ev = complete(doc)
    gpu = {round(e["ts"], 3): e for e in ev if e.get("cat") == "kernel"}
    calls = {e["args"]["correlation"]: e for e in ev
             if e.get("cat") == "cuda_runtime" and "correlation" in (e.get("args") or {})}
    out = []
    for s, d, c in zip(iv["start_us"], iv["dur_us"], iv["cause"]):
        k = gpu.get(round(s + d, 3))
        if c == "host_launch" and d >= 40 and k is not None and k["args"].get("correlation") in calls:
            call = calls[k["args"]["correlation"]]
            out.append((call["ts"], call))
    return out


def _op(doc, call, name, ts, dur, args=None):
    doc["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": name, "pid": call["pid"], "tid": call["tid"],
                               "ts": ts, "dur": dur, "args": dict(args or {})})


def _launch(doc, call, ts, kernel_name, kernel_dur, corr):
    doc["traceEvents"].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": call["pid"],
                               "tid": call["tid"], "ts": ts, "dur": 4, "args": {"correlation": corr}})
    doc["traceEvents"].append({"ph": "X", "cat": "kernel", "name": kernel_name, "pid": 0, "tid": 7, "ts": ts + 5,
                               "dur": kernel_dur, "args": {"correlation": corr, "device": 0, "stream": 7}})


def _plant_cast(doc, call, L, corr):
    # the run pauses 2 µs longer than the op: the launch that was at L starts after it ends
    insert_call(doc, pid=call["pid"], tid=call["tid"], ts=L, dur=CAST_US + 2, name="aten::to", cat="cpu_op")
    doc["traceEvents"][-1]["dur"] = CAST_US
    doc["traceEvents"].append({"ph": "X", "cat": "python_function", "name": "train.py(42): forward",
                               "pid": call["pid"], "tid": call["tid"], "ts": L, "dur": CAST_US, "args": {}})
    _op(doc, call, "aten::_to_copy", L + 1, CAST_US - 2)
    _op(doc, call, "aten::copy_", L + 2, CAST_US - 4)
    _launch(doc, call, L + 3, COPY_KERNEL, CAST_KERNEL_US, corr)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("overhead")
    doc = load(STEPS)
    base = _analyze(doc, tmp / "base.json")
    gaps = _gaps(doc, base)
    steps = base["critical_path"]["steps"]
    picks = []
    for s in steps:  # 3 host-launch gaps inside each step, the longest ones
        inside = [g for g in gaps if s["start_us"] <= g[0] < s["start_us"] + s["length_us"]]
        picks += sorted(inside, key=lambda g: g[0])[:3]
    assert len(picks) == 15
    rest = [g for g in gaps if g not in picks]
    copy_at = rest[0]
    for i, (L, call) in enumerate(sorted(picks + [copy_at], key=lambda g: -g[0])):  # last first: the inserts pause later events
        if (L, call) is copy_at or (L, call) == copy_at:
            insert_call(doc, pid=call["pid"], tid=call["tid"], ts=L, dur=42.0, name="aten::mm", cat="cpu_op",
                        args={"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]})
            for e in doc["traceEvents"]:  # the mm inserted at L starts 20 µs later, after the clone
                if e.get("name") == "aten::mm" and e["ts"] == L:
                    e["ts"], e["dur"] = L + 20, 20
            _op(doc, call, "aten::clone", L, 18, {"Input Dims": [[64, 64]], "Input type": ["float"]})
            _launch(doc, call, L + 2, COPY_KERNEL, 6.0, 900_000 + i)
            _launch(doc, call, L + 22, "gemmSN_NN_kernel", 10.0, 910_000 + i)
        else:
            _plant_cast(doc, call, L, 800_000 + i)
    return base, _analyze(doc, tmp / "planted.json")


def test_a_cast_repeated_three_times_per_step_is_found_with_its_call_site(planted):
    base, a = planted
    assert base["tiny_kernels"]["groups"] and all(g["kind"] == "fill" for g in base["tiny_kernels"]["groups"])
    g = next(g for g in a["tiny_kernels"]["groups"] if g["kind"] == "cast/copy")
    assert g["op"].endswith("aten::to") and g["python"] == "train.py(42) forward"
    assert g["count"] == 15 and g["per_step"] == pytest.approx(3.0)
    f = next(f for f in diagnose_rank(a) if f.id == "tiny_kernels")
    assert "3.0/step cast/copy from" in f.evidence and "do the cast once" in f.fix
    # the gain is the what-if's: removing them gives back at least the planted host time
    s = next(s for s in a["whatif"]["scenarios"] if s["label"] == "remove tiny_kernels")
    planted_us = a["whatif"]["scenarios"][0]["measured_step_us"] - base["whatif"]["scenarios"][0]["measured_step_us"]
    assert planted_us > 0
    assert s["measured_step_us"] - s["projected_step_us"] >= 0.9 * planted_us
    assert f.projected_gain_pct == s["gain_pct"] and f.estimated_gain_pct == s["bound_pct"]
    assert 0 < s["gain_pct"] <= s["bound_pct"]


def test_a_copy_feeding_a_matmul_with_its_own_source_is_redundant(planted):
    base, a = planted
    assert base["redundant_copies"]["count"] == 0
    rc = a["redundant_copies"]
    assert rc["count"] == 1 and rc["pairs"][0]["copy"] == "aten::clone" and rc["pairs"][0]["consumer"] == "aten::mm"
    assert rc["pairs"][0]["dims"] == [64, 64] and rc["time_us"] == pytest.approx(6.0)
    f = next(f for f in diagnose_rank(a) if f.id == "redundant_copies")
    assert "aten::clone of [64, 64] → aten::mm" in f.evidence
    assert f.projected_gain_pct is not None and f.projected_gain_pct <= f.estimated_gain_pct


def _cpu_trace(path: Path, second_dims: list) -> Path:
    ops = [("aten::clone", 0, 10, {"Input Dims": [[128, 128]], "Input type": ["float"]}),
           ("aten::mm", 12, 30, {"Input Dims": [[128, 128], second_dims], "Input type": ["float", "float"]})]
    doc = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": n, "pid": 1, "tid": 1, "ts": 1000 + ts, "dur": d,
                            "args": a} for n, ts, d, a in ops]}
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("second, found", [([128, 128], 1), ([128, 64], 0)])
def test_cpu_traces_by_hand(tmp_path, second, found):
    # clone of x [128, 128] then mm(x, y): y of x's shape → the copy fed beside its source;
    # y [128, 64] (a near miss) → nothing
    a = plain(trace_report.analyze_trace(read_trace(_cpu_trace(tmp_path / "c.json", second)), file="c"))
    assert a["redundant_copies"]["count"] == found and a["redundant_copies"]["time_kind"] == "host"
    ids = [f.id for f in diagnose_rank(a)]
    assert ("redundant_copies" in ids) == bool(found)
    if found:
        assert a["redundant_copies"]["time_us"] == 10.0
