"""Seed 002's flowchart on planted records (diagnose/flowchart.py): each planted truth decides
one branch, and the path says which test passed with its number."""

from trainprof.diagnose.engine import diagnose_rank
from trainprof.diagnose.flowchart import flowchart, path_text

from tests.unit.diagnose.run_records import run_record


def _busy_run(compute_s: float, mfu: float, peak_source: str = "measured"):
    # step 1.0 s: forward + backward = compute_s, the rest optimizer; MFU planted
    return run_record({"forward_s": compute_s / 3, "backward_s": 2 * compute_s / 3, "optimizer_s": 1.0 - compute_s,
                       "tflops": 1.0, "mfu": mfu},
                      device={"peak_tflops": 1.0 / mfu, "peak_source": peak_source})


def _data_run(workers_cpu: float | None):
    # step 1.0 s, 0.6 s waiting for data: the device is busy 40% of it
    system = {"summary": {"workers_cpu_pct": {"mean": workers_cpu, "max": workers_cpu, "workers_max": 4}}}
    return run_record({"data_s": 0.6, "forward_s": 0.2, "backward_s": 0.2, "tflops": 1.0, "mfu": 0.3},
                      system=system if workers_cpu is not None else None, config={"workers": 4})


def test_busy_95_percent_at_20_percent_of_achievable_is_busy_but_slow():
    run = _busy_run(0.95, 0.20)
    chart = flowchart(None, run)
    assert chart.branch == "compute efficiency: busy but slow"
    assert [t.answer for t in chart.path] == ["no", "yes"]
    assert chart.path[0].value == 95.0 and chart.path[1].value == 20.0
    assert "95.0%: no" in path_text(chart)
    found = diagnose_rank(None, run)
    slow = next(f for f in found if f.id == "busy_but_slow")
    assert slow.estimated_gain_pct == 80.0  # 100 − 20% of achievable, nothing else claims it
    assert slow.bottleneck == "compute"


def test_busy_near_the_ceiling_stops_and_fires_nothing():
    run = _busy_run(0.95, 0.70)
    assert flowchart(None, run).branch == "near the ceiling"
    assert not any(f.id == "busy_but_slow" for f in diagnose_rank(None, run))


def test_busy_80_percent_and_slow_is_compute_efficiency_without_the_busy_finding():
    run = _busy_run(0.80, 0.20)
    assert flowchart(None, run).branch == "compute efficiency"
    assert not any(f.id == "busy_but_slow" for f in diagnose_rank(None, run))


def test_data_bound_with_hot_workers_is_preprocessing_and_cold_is_io():
    hot, cold, unknown = _data_run(95.0), _data_run(5.0), _data_run(None)
    assert flowchart(None, hot).branch == "data loading: preprocessing-bound"
    assert flowchart(None, cold).branch == "data loading: I/O-bound"
    chart = flowchart(None, unknown)
    assert chart.branch == "data loading" and chart.path[-1].answer == "unknown"
    assert [t.value for t in flowchart(None, hot).path] == [40.0, 60.0, 95.0]
    titles = {k: next(f for f in diagnose_rank(None, r) if f.id == "data_loading").title
              for k, r in (("hot", hot), ("cold", cold), ("unknown", unknown))}
    assert "preprocessing-bound" in titles["hot"] and "I/O-bound" in titles["cold"]
    assert "bound" not in titles["unknown"].split(":")[-1] or ":" not in titles["unknown"]


def test_no_record_is_unknown_never_a_guess():
    chart = flowchart(None, None)
    assert chart.branch == "unknown" and chart.path[0].value is None


def test_the_measured_ceiling_in_run_json_sets_the_achievable():
    # MFU 30% of a 1000 TFLOP/s datasheet peak = 300 TFLOP/s; a measured 600 ceiling → 50% of it
    run = run_record({"forward_s": 0.3, "backward_s": 0.65, "optimizer_s": 0.05, "tflops": 300.0, "mfu": 0.30},
                     device={"kind": "cuda", "peak_tflops": 1000.0, "peak_source": "datasheet"},
                     achievable={"tflops": 600.0, "dtype": "bf16"})
    t = flowchart(None, run).path[1]
    assert t.value == 50.0 and t.answer == "no" and "ceiling" in t.source
    # without it, MFU against the datasheet (a lower bound) says "yes": the ceiling changes the branch
    bare = run_record({"forward_s": 0.3, "backward_s": 0.65, "optimizer_s": 0.05, "tflops": 300.0, "mfu": 0.30},
                      device={"kind": "cuda", "peak_tflops": 1000.0, "peak_source": "datasheet"})
    assert flowchart(None, bare).branch == "compute efficiency: busy but slow"
    assert next(f for f in diagnose_rank(None, bare) if f.id == "busy_but_slow").confidence == "low"
