"""trainprof diff: per-step figures from the per-step records, idle causes and findings
compared, the story in words. Two hand-written 3-step traces, arithmetic worked below."""

import json

import pytest

from trainprof.analysis.job.diff import diff_ranks, gpu_steps
from trainprof.analysis.trace_report import analyze_trace
from trainprof.jobs.analyze import add_findings
from trainprof.report.diff_terminal import diff_markdown
from trainprof.trace import read_trace

LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _trace(tmp_path, name, step_us, loader_us):
    """3 steps of `step_us`; each: a DataLoader range of `loader_us`, then aten::mm launching
    a 500 µs GEMM 10 µs after the loader returns."""
    ev = []
    for i in range(3):
        t0 = i * step_us
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                   "ts": t0, "dur": step_us})
        if loader_us:
            ev.append({"ph": "X", "cat": "user_annotation", "name": LOADER, "pid": 1, "tid": 1, "ts": t0, "dur": loader_us})
        ev += [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + loader_us + 5, "dur": 10},
               {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                "ts": t0 + loader_us + 10, "dur": 3, "args": {"correlation": i + 1}},
               {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7,
                "ts": t0 + loader_us + 20, "dur": 500, "args": {"correlation": i + 1, "stream": 7, "device": 0}}]
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
                             "traceEvents": ev}))
    return add_findings(analyze_trace(read_trace(p), file=str(p)), None)


@pytest.fixture
def pair(tmp_path):
    # base: 1000 µs steps, 300 µs data wait each; new: 500 µs steps, no loader
    return _trace(tmp_path, "base", 1000, 300), _trace(tmp_path, "new", 500, 0)


def test_per_step_figures_divide_by_the_steps_each_window_covers(pair):
    base, new = pair
    d = diff_ranks(base, new)
    # base GEMMs run [320, 820], [1320, 1820], [2320, 2820]. Per-step windows end at each
    # step's GPU end: (320, 820], (820, 1820], (1820, 2820] -> compute 500 each, idle 0 + 500 + 500.
    assert gpu_steps(base) == 3
    assert d.temporal_breakdown["compute"].base_us_per_step == pytest.approx(500.0)
    assert d.temporal_breakdown["idle"].base_us_per_step == pytest.approx(1000.0 / 3)
    # the HTA window (launched before step 2 began) holds only 2 steps: 1000 µs compute.
    # Dividing it by 3 steps would read 333 µs, a third low.
    assert base.temporal_breakdown.compute_us == pytest.approx(1000.0)
    # new: GEMMs back to back [20, 520], [520, 1020], [1020, 1520]: 500 compute, 0 idle per step
    assert d.temporal_breakdown["compute"].new_us_per_step == pytest.approx(500.0)
    assert d.temporal_breakdown["idle"].new_us_per_step == pytest.approx(0.0)
    # kernels: 3 × 500 µs over 3 steps = 500 µs per step on both sides
    k = {r.name: r for r in d.kernels.top}["volta_sgemm_128x64_nn"]
    assert k.base_us_per_step == k.new_us_per_step == pytest.approx(500.0)
    assert d.step_time_us.base == 1000.0 and d.step_time_us.speedup == pytest.approx(2.0)


def test_idle_causes_findings_and_story(pair):
    base, new = pair
    d = diff_ranks(base, new)
    # gaps (820, 1320] and (1820, 2320]: the loader covers 300 of each 500 µs (≥ 50%): data
    # loading, 1000 µs over 3 steps = 333 µs per step; the new trace has no gap
    dl = d.idle_causes["data_loading"]
    assert dl.base_us_per_step == pytest.approx(1000.0 / 3) and dl.new_us_per_step == 0.0
    assert d.story[0] == "data-loading idle 333 µs → 0 per step"
    f = {x.id: x for x in d.findings}
    assert f["data_loading"].status == "disappeared" and f["data_loading"].new_gain_pct is None
    assert any(line.startswith("gone: ") and "data_loading" in line for line in d.story)
    md = diff_markdown(d)  # the record diff.json is written from
    assert "* data-loading idle 333 µs → 0 per step" in md and "| data-loading idle |" in md


def test_rank_summary_uses_the_same_per_step_rule(pair):
    from trainprof.analysis.trace_report import rank_summary

    base, _ = pair
    s = rank_summary(base)
    # per-step means (500 compute, 1000/3 idle), not the HTA window ÷ 3 steps (333, 167)
    assert s["compute_us"] == pytest.approx(500.0) and s["idle_us"] == pytest.approx(1000.0 / 3)
