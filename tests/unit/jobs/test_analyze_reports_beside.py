"""`analyze --out`: report.html and report.md written by a child forked before the trace is read
(warmed up while the analysis runs) while the tables render here (jobs/analyze_job.py
_report_writer, _reports_beside) give the bytes the serial path gives: the files, the
terminal's text and the `wrote` lines."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from trainprof import forked
from trainprof.analysis import trace_report
from trainprof.cli import main

TRACE = Path(__file__).resolve().parents[2] / "data" / "traces" / "real" / "tracelens_h100_hf_inference" / \
    "gaunernst_bert-small-uncased__1016001.json.gz"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks only on Linux")
def test_reports_beside_the_tables_are_the_serial_ones(tmp_path, capsys, monkeypatch):
    got, forks = {}, []
    for module in (forked, trace_report):  # whatever else this machine runs
        monkeypatch.setattr(module, "spare_core", lambda: True)
    fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or fork())
    for how in ("serial", "forked"):
        if how == "serial":
            monkeypatch.setitem(sys.modules, "torch", sys)  # forked.can_fork refuses: everything here, in turn
        else:
            monkeypatch.delitem(sys.modules, "torch")  # conftest imported it; nothing on this path uses it
        out = tmp_path / how / "a"  # one folder name: report titles name it
        assert main(["analyze", str(TRACE), "--out", str(out)]) == 0
        text = capsys.readouterr().out.replace(str(out), "OUT")
        got[how] = (text, *((out / f).read_bytes() for f in ("analysis.json", "report.md", "report.html")))
        assert len(forks) == (2 if how == "forked" else 0)  # the report writer, the what-ifs
    assert "OUT/report.html and OUT/report.md" in got["serial"][0]
    assert got["forked"] == got["serial"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks only on Linux")
def test_several_traces_fork_the_writer_after_the_pool(tmp_path, capsys, monkeypatch):
    """One trace: the writer is forked before the read, to warm up beside it. Several: after
    the pool, whose workers would share the cores with its warm-up; the files are the same."""
    import shutil

    from trainprof.jobs import analyze, analyze_job

    for module in (forked, trace_report):
        monkeypatch.setattr(module, "spare_core", lambda: True)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    order: list[str] = []
    map_ranks, writer = analyze.map_ranks, analyze_job._report_writer
    monkeypatch.setattr(analyze, "map_ranks", lambda *a, **k: order.append("pool") or map_ranks(*a, **k))
    monkeypatch.setattr(analyze_job, "_report_writer", lambda: order.append("writer") or writer())
    job = tmp_path / "job"
    job.mkdir()
    for name in ("rank0.json.gz", "rank1.json.gz"):
        shutil.copyfile(TRACE, job / name)
    assert main(["analyze", str(job), "--out", str(tmp_path / "forked" / "a"), "--jobs", "2"]) == 0
    assert order == ["pool", "writer"]
    assert main(["analyze", str(TRACE), "--out", str(tmp_path / "one")]) == 0
    assert order[2:] == ["writer", "pool"]
    capsys.readouterr()
    # the same reports as the serial path for the two-trace folder
    monkeypatch.setitem(sys.modules, "torch", sys)  # forked.can_fork refuses: no writer at all
    assert main(["analyze", str(job), "--out", str(tmp_path / "serial" / "a"), "--jobs", "2"]) == 0
    for f in ("analysis.json", "report.md", "report.html"):  # one folder name: report titles name it
        assert (tmp_path / "forked" / "a" / f).read_bytes() == (tmp_path / "serial" / "a" / f).read_bytes(), f


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks only on Linux")
def test_a_folder_name_that_is_not_utf8_reaches_the_writer(tmp_path, capsys, monkeypatch):
    """The writer gets the paths as bytes: a folder named b'o\\xfe' is a str with a surrogate,
    which msgpack cannot carry (UnicodeEncodeError, a traceback, exit 1, whenever a core was free)."""
    for module in (forked, trace_report):
        monkeypatch.setattr(module, "spare_core", lambda: True)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    forks = []
    fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or fork())
    out = os.fsdecode(os.fsencode(tmp_path) + b"/o\xfe")
    assert main(["analyze", str(TRACE), "--out", out]) == 0
    assert len(forks) == 2  # the report writer, the what-ifs
    assert "o\\xfe/report.md" in capsys.readouterr().out
    assert (Path(out) / "report.html").is_file() and (Path(out) / "report.md").is_file()
