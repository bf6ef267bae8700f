"""Issue #45, item 6: values that were tracebacks. Each is now handled, or one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainprof.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = DATA / "traces" / "idle_causes.json"
NCU = DATA / "ncu" / "raw_page.csv"
SRC = Path(__file__).resolve().parents[2] / "src"


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("trainprof: error: "), err
    return lines[0]


def test_a_profiler_step_number_beyond_int64_is_read_as_no_number(tmp_path, capsys):
    """"ProfilerStep#" + 40 digits was an OverflowError traceback (np.int64 of the number)."""
    d = json.loads(TRACE.read_text())
    for e in d["traceEvents"]:
        if e.get("name") == "ProfilerStep#2":
            e["name"] = "ProfilerStep#" + "9" * 40
    p = tmp_path / "t.json"
    p.write_text(json.dumps(d))
    assert main(["analyze", str(p)]) == 0
    assert "2 profiler steps" in capsys.readouterr().out
