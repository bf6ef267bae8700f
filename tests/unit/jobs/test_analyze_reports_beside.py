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
