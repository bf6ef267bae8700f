"""`trainprof report DIR` end to end, the reports `run`/`analyze`/`tune` write by default,
and report.html in a real headless browser (Chromium from the OS packages)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trainprof.cli import build_parser, main

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "reports"
TRACES = REPO / "tests" / "data" / "traces"


def _folder(tmp_path: Path, *kinds: str, name: str = "rep") -> Path:
    out = tmp_path / name
    out.mkdir(parents=True, exist_ok=True)
    for k in kinds:
        for f in (DATA / k).iterdir():
            shutil.copy(f, out / f.name)
    return out


def test_report_writes_html_and_md(tmp_path, capsys):
    d = _folder(tmp_path, "cpu_run", "tune", "memory")
    assert main(["report", str(d)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {d / 'report.html'}" in out and f"wrote {d / 'report.md'}" in out
    html = (d / "report.html").read_text()
    assert 'id="tune"' in html and 'id="memory"' in html and 'id="steps"' in html
    assert "## 5. Speed-up per iteration" in (d / "report.md").read_text()
    # no temp files left; the reports are listed in the folder's manifest (what --force may replace)
    assert [p.name for p in d.iterdir() if p.name.startswith(".")] == [".trainprof-manifest.json"]


def test_out_and_format(tmp_path):
    d = _folder(tmp_path, "gpu_trace")
    out = tmp_path / "reports"
    assert main(["report", str(d), "--out", str(out), "--format", "md"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".trainprof-manifest.json", "report.md"]
    assert not (d / "report.html").exists() and not (d / "report.md").exists()


@pytest.mark.parametrize("fmt", ["pdf", "", "html,txt"])
def test_bad_format(tmp_path, capsys, fmt):
    d = _folder(tmp_path, "bench")
    assert main(["report", str(d), "--format", fmt]) == 2
    assert "--format" in capsys.readouterr().err


def test_folder_without_records_is_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path) in err and "no trainprof records" in err
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_corrupt_json_is_one_line_naming_the_file(tmp_path, capsys):
    d = _folder(tmp_path, "cpu_run")
    (d / "analysis.json").write_text('{"schema": "trainprof.analysis/1", "ranks": [')
    assert main(["report", str(d)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(d / "analysis.json") in err and "not valid JSON" in err
    assert not (d / "report.html").exists()


def test_analyze_out_writes_reports_unless_no_report(tmp_path, capsys):
    out = tmp_path / "a"
    assert main(["analyze", str(TRACES / "idle_causes.json"), "--out", str(out)]) == 0
    assert f"wrote {out / 'report.html'} and {out / 'report.md'}" in capsys.readouterr().out
    assert 'id="profile"' in (out / "report.html").read_text()
    out2 = tmp_path / "b"
    assert main(["analyze", str(TRACES / "idle_causes.json"), "--out", str(out2), "--no-report"]) == 0
    assert (out2 / "analysis.json").exists() and not list(out2.glob("report.*"))
    capsys.readouterr()
    # --json keeps stdout pure JSON
    out3 = tmp_path / "c"
    assert main(["analyze", str(TRACES / "idle_causes.json"), "--out", str(out3), "--json"]) == 0
    json.loads(capsys.readouterr().out)
    assert (out3 / "report.md").exists()


@pytest.mark.slow  # trains the workload
def test_run_writes_reports_inside_its_folder(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["run", "--steps", "3", "--warmup-steps", "1", "--micro-batch", "2", "--seq-len", "32",
            "--eval-batches", "1", "--device", "cpu", "--out", str(out)]
    assert main(argv) == 0
    assert f"wrote {out / 'report.html'} and {out / 'report.md'}" in capsys.readouterr().out
    html = (out / "report.html").read_text()
    assert "trainprof report: run<" in html  # the final folder's name, not the staging folder's
    assert 'id="steps"' in html and 'id="profile"' not in html
    assert build_parser().parse_args(argv + ["--no-report"]).report is False


def test_tune_has_no_report_flag_and_auto_report_on_a_tune_folder(tmp_path, capsys):
    from trainprof.report.files import auto_report

    assert build_parser().parse_args(["tune", "--no-report"]).report is False
    d = _folder(tmp_path, "tune")
    note = auto_report(d)
    assert note == f"wrote {d / 'report.html'} and {d / 'report.md'}"
    assert auto_report(d, enabled=False) is None
    # a record that cannot be read costs a warning, never the run
    (d / "tune.json").write_text("{")
    assert auto_report(d) is None
    assert "warning: no report written" in capsys.readouterr().err


def test_report_in_place_keeps_a_report_trainprof_did_not_write(tmp_path, capsys):
    """#45: `report DIR` replaced any report.md in DIR; now only one DIR's manifest lists (one
    trainprof wrote), unless --force."""
    d = _folder(tmp_path, "cpu_run")
    (d / "report.md").write_text("my notes")
    assert main(["report", str(d)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "its report.md was not written by trainprof" in err[0] and "--force" in err[0]
    assert (d / "report.md").read_text() == "my notes" and not (d / "report.html").exists()
    assert main(["report", str(d), "--format", "html"]) == 0  # the other file may be written
    capsys.readouterr()
    assert main(["report", str(d), "--force"]) == 0  # asked for: replaced, and listed from now on
    assert (d / "report.md").read_text().startswith("# Training performance report")
    assert main(["report", str(d)]) == 0  # trainprof's own now: replaced without --force
