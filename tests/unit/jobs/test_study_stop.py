"""The study's stop criterion (seed 001: optimise until close to the achievable, then stop),
computed once from the optimised run.json into study.json's `stop` (jobs/study_verdicts.py) and
laid out by report.md as one line of its own, each number a field of study.json."""

from __future__ import annotations

import json

from trainprof.jobs.study_verdicts import stop_verdict
from trainprof.report import figures
from trainprof.report.loader import load_folder
from trainprof.report.markdown import render_markdown

from tests.unit.diagnose.run_records import run_record

GPU = {"kind": "cuda", "peak_tflops": 1000.0, "peak_source": "datasheet"}


def test_the_verdict_against_a_ceiling_a_measured_peak_and_a_datasheet_bound():
    # 400 of a 500 TFLOP/s measured matmul ceiling = 80% ≥ 70%: met
    near = run_record({"tflops": 400.0, "mfu": 0.40}, device=GPU, achievable={"tflops": 500.0})
    assert stop_verdict(near) == {
        "pct_of_achievable": 80.0,
        "threshold_pct": 70.0,
        "met": True,
        "basis": "% of the measured matmul ceiling (bench matmul)",
    }
    # 100 of 500 = 20%: not met, decided by a measured ceiling
    assert (
        stop_verdict(run_record({"tflops": 100.0, "mfu": 0.10}, device=GPU, achievable={"tflops": 500.0}))["met"]
        is False
    )
    # no ceiling: MFU 30% of the datasheet is a lower bound of the % of achievable, so undecided
    low = stop_verdict(run_record({"tflops": 300.0, "mfu": 0.30}, device=GPU))
    assert (low["pct_of_achievable"], low["met"]) == (30.0, None)
    # a CPU's measured peak decides both ways
    cpu = {"peak_tflops": 1.0, "peak_source": "measured"}
    assert stop_verdict(run_record({"tflops": 0.25, "mfu": 0.25}, device=cpu))["met"] is False
    assert stop_verdict(run_record({"tflops": 0.0}))["met"] is None  # no model FLOP/s: unknown


def test_report_md_has_the_stop_line_with_study_json_numbers(tmp_path):
    run = run_record({"tflops": 100.0, "mfu": 0.10}, device=GPU, achievable={"tflops": 500.0})
    (tmp_path / "baseline").mkdir()
    (tmp_path / "baseline" / "run.json").write_text(run.to_json())
    stop = stop_verdict(run)
    (tmp_path / "study.json").write_text(
        json.dumps({"schema": "trainprof.study/2", "records": {"run": "baseline/run.json"}, "stop": stop})
    )
    with figures.capture() as shown:
        md = render_markdown(load_folder(tmp_path))
    line = next(x for x in md.splitlines() if x.startswith("**Stop criterion"))
    assert line.startswith(
        "**Stop criterion: not met.** The optimised configuration runs at 20.0% of the achievable (stop at ≥ 70%;"
    )
    assert {(s.field, s.value) for s in shown} >= {
        ("study.stop.pct_of_achievable", 20.0),
        ("study.stop.threshold_pct", 70.0),
    }


def test_report_html_states_the_same_stop_line(tmp_path):
    from trainprof.report.html import render_html

    run = run_record({"tflops": 400.0, "mfu": 0.40}, device=GPU, achievable={"tflops": 500.0})
    (tmp_path / "baseline").mkdir()
    (tmp_path / "baseline" / "run.json").write_text(run.to_json())
    (tmp_path / "study.json").write_text(
        json.dumps({"schema": "trainprof.study/2", "records": {"run": "baseline/run.json"}, "stop": stop_verdict(run)})
    )
    with figures.capture() as shown:
        html = render_html(load_folder(tmp_path))
    assert "<strong>Stop criterion: met.</strong>" in html
    assert "runs at 80.0% of the achievable (stop at ≥ 70%;" in html
    assert ("study.stop.pct_of_achievable", 80.0) in {(s.field, s.value) for s in shown}
