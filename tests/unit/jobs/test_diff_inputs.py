"""`trainprof diff`'s sides (jobs/diff.py): what a folder holds is counted right, a run folder's
findings are its own analysis's figures (one field of one record), bad input is one line, exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from study_fakes import write_cpu_trace

from trainprof.cli import main
from trainprof.errors import UsageError
from trainprof.jobs.diff import diff_inputs, resolve
from trainprof.report.diff_terminal import diff_markdown, print_diff

CPU_RUN = Path(__file__).parents[2] / "data" / "reports" / "cpu_run"  # run.json + analysis.json, no trace kept


def _printed(d) -> str:  # noqa: ANN001
    con = Console(record=True, width=200)
    print_diff(d, con)
    return con.export_text()


def _cpu_trace_folder(tmp_path: Path, name: str) -> Path:
    """cpu_run's run.json beside a hand-written CPU-only trace (2 profiler steps, no GPU event)."""
    out = tmp_path / name
    out.mkdir()
    shutil.copy(CPU_RUN / "run.json", out / "run.json")
    write_cpu_trace(out / "trace.json.gz", steps=2)
    return out


def test_a_run_folder_without_traces_holds_none():
    side = resolve(str(CPU_RUN))
    # the folder holds analysis.json, ettr.json and run.json: no trace (the old code counted "2"/"3" JSON files)
    assert side.trace is None and side.traces == 0 and side.run is not None
    d = diff_inputs(side, resolve(str(CPU_RUN)), 10)
    assert d.base.file is None and d.base.traces == 0 and d.step_time_us.speedup is None
    text = _printed(d)
    assert "run folder: run.json, no trace" in text and "holds" not in text and "GPU work" not in text
    # 4 steps, 2 of them warm-up: 2 measured, too few for an interval
    assert d.verdict.call == "untested" and "2 and 2 measured steps" in d.verdict.why


def test_a_cpu_only_trace_folder_has_no_gpu_work(tmp_path):
    a, b = _cpu_trace_folder(tmp_path, "a"), _cpu_trace_folder(tmp_path, "b")
    d = diff_inputs(resolve(str(a)), resolve(str(b)), 10)
    assert d.base.traces == 1 and d.base.steps == 2 and d.base.has_gpu is False and d.base.gpu_steps is None
    text, md = _printed(d), diff_markdown(d)
    assert "1 trace; CPU, 2 profiled steps" in text and "GPU work" not in text and "GPU work" not in md
    # the folder's trace named directly stands for the folder (its run.json holds the measured steps)
    assert resolve(str(a / "trace.json.gz")).run is not None


def test_findings_show_the_figures_of_the_folders_own_analysis(tmp_path):
    # planted: analysis.json says "up to 31.5%, projected 23.2%" for optimizer_bound; diagnosing the
    # trace again here would give another figure (the old third number)
    a = _cpu_trace_folder(tmp_path, "a")
    analysis = json.loads((CPU_RUN / "analysis.json").read_text())
    f = analysis["ranks"][0]["findings"][0]
    assert f["id"] == "optimizer_bound"
    f.update(estimated_gain_pct=31.5, projected_gain_pct=23.2)
    (a / "analysis.json").write_text(json.dumps(analysis))
    b = _cpu_trace_folder(tmp_path, "b")  # no analysis.json: run.json's findings, as its report lists them
    d = diff_inputs(resolve(str(a)), resolve(str(b)), 10)
    fd = {x.id: x for x in d.findings}["optimizer_bound"]
    assert (fd.base_gain_pct, fd.base_projected_pct) == (31.5, 23.2)
    run_f = json.loads((CPU_RUN / "run.json").read_text())["findings"][0]
    assert fd.new_gain_pct == run_f["estimated_gain_pct"]
    text, md = _printed(d), diff_markdown(d)
    for shown in (text, md):
        assert "up to 31.5%, projected 23.2%" in shown and f"up to {run_f['estimated_gain_pct']:.1f}%" in shown


def test_bad_sides_are_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(UsageError, match="holds 2 trace files"):
        folder = tmp_path / "two"
        folder.mkdir()
        for n in ("x", "y"):
            write_cpu_trace(folder / f"{n}.json.gz")
        resolve(str(folder))
    # a trace against a run folder without one: nothing in common
    assert main(["diff", str(CPU_RUN), str(folder / "x.json.gz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing to compare" in err
    assert main(["diff", str(tmp_path / "missing"), str(CPU_RUN)]) == 2
