"""py-spy's raw samples -> the host functions that hold the step (issue #40 item 4).

Planted truth: tests/data/py_spy/planted_host.py runs `collate` (3 units of one loop) and
`metrics` (1 unit) per step; its recorded py-spy output (149 samples at 100 Hz) must name
collate first with ~75% of the host's active samples and metrics with ~25%, within the
sampling error (σ = √(p(1−p)/n) ≈ 3.5 points at n = 149; the bound is 2σ)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainprof.analysis.timeline.host_stacks import parse_raw, read_host_stacks, sibling
from trainprof.diagnose.host_stacks import host_clause, name_host_functions
from trainprof.errors import InputError
from trainprof.recordtypes.finding import Finding

DATA = Path(__file__).resolve().parents[2] / "data" / "py_spy"


@pytest.fixture(scope="module")
def planted():
    return parse_raw((DATA / "planted_host.py_spy.txt").read_text())


def test_planted_functions_and_shares(planted):
    by = {f.function: f for f in planted.top_total}
    assert planted.samples == 149
    assert "main (planted_host.py)" not in by  # on every sample: the program's own frame
    collate, metrics = by["collate (planted_host.py)"], by["metrics (planted_host.py)"]
    assert abs(collate.total_pct - 75.0) <= 7.0 and abs(metrics.total_pct - 25.0) <= 7.0
    # the loop both call is where the CPU is (self), under either caller
    assert planted.top_self[0].function == "work (planted_host.py)" and planted.top_self[0].self_pct > 95
    assert all(f.self_pct <= f.total_pct for f in planted.top_total)


def test_clause_names_the_holders_not_the_program_frame(planted):
    text = host_clause(planted)
    assert text.index("collate") < text.index("metrics")
    assert "main" not in text and "<module>" not in text  # on every sample: true of any step


def test_only_host_findings_gain_the_clause(planted):
    found = [Finding(id="launch_bound", severity="high", bottleneck="host overhead", evidence="e"),
             Finding(id="low_tensor_core", severity="high", bottleneck="compute", evidence="e"),
             Finding(id="contended_machine", severity="info", bottleneck="host overhead", evidence="e")]
    out = name_host_functions(found, planted)
    assert "collate" in out[0].evidence and out[1].evidence == "e" and out[2].evidence == "e"
    assert name_host_functions(found, None) is found


def test_lines_and_threads_are_read():
    text = ("thread (0x1);<module> (train.py:3);step (train.py:10);collate (data.py:5) 3\n"
            "thread (0x2);<module> (train.py:3);step (train.py:11);metric (m.py:2) 1\n"
            "thread (0x2);wait (threading.py:320) 4\n"
            "garbage line\n")
    h = parse_raw(text)
    assert h.samples == 8 and h.threads == 2 and h.idle_pct == 50.0
    by = {f.function: f for f in h.top_total}
    assert by["step (train.py)"].total_pct == 50.0  # one function whatever its line


def test_bad_input_is_one_line_error(tmp_path):
    with pytest.raises(InputError, match="no py-spy samples"):
        parse_raw("not a stack\n")
    assert read_host_stacks(tmp_path / "trace.json.gz") is None


def test_sibling_names():
    assert sibling("/a/trace.json.gz").name == "trace.py_spy.txt"
    assert sibling("/a/traces/rank1.json.gz").name == "rank1.py_spy.txt"
    assert sibling("/p/rank0.trace.part.json.gz").name == "rank0.trace.part.py_spy.txt"


def test_tied_functions_keep_one_order_whatever_the_hash_seed():
    """Two functions tied in the inclusive view are listed outermost first in every process: the
    order once followed a set's, which the string hash (PYTHONHASHSEED) decides, and analysis.json
    differed between two runs of one trace."""
    import subprocess
    import sys

    code = ("from trainprof.analysis.timeline.host_stacks import parse_raw\n"
            "raw = 'main (/w/train.py:9);fetch (/w/data.py:3);decode (/w/data.py:7) 3\\n"
            "main (/w/train.py:9);step (/w/train.py:20) 7\\n'\n"
            "print([r.function for r in parse_raw(raw).top_total])")
    seen = {subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, "PYTHONHASHSEED": str(seed)},
                           capture_output=True, text=True, check=True).stdout.strip() for seed in range(6)}
    # main is on every sample (left out, OUTER_PCT); step 70%; fetch and decode 30% each, tied
    assert seen == {"['step (/w/train.py)', 'fetch (/w/data.py)', 'decode (/w/data.py)']"}, seen
