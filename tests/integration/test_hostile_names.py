"""Issue #45, item 1: names in a trace cannot hang `analyze`.

The attacks of the issue, end to end: a kernel named "gemm_" x 200,000 (1.7 KB of gzip; > 300 s
before), a runtime call named "Memcpy" x 170,000 (> 300 s, and SIGTERM was not honoured while
the analysis thread sat in one regex call), a device name of alternating brackets (rich's
highlighter: 14 s of CPU for 40 KB). Each run is a fresh process with a wall-clock limit far
from the old cost (the old code needs minutes; a pass takes about a second).
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = DATA / "traces" / "idle_causes.json"
SRC = Path(__file__).resolve().parents[2] / "src"


def _attack(tmp_path: Path, kind: str, n: int) -> Path:
    d = json.loads(TRACE.read_text())
    ev = d["traceEvents"]
    if kind == "kernel":  # a kernel launched in step 1, as a GEMM would be
        ev.append({"ph": "X", "cat": "kernel", "name": "gemm_" * n, "pid": 0, "tid": 7, "ts": 1500, "dur": 10,
                   "args": {"correlation": 99, "stream": 7, "device": 0}})
    elif kind == "runtime":
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "Memcpy" * n, "pid": 1, "tid": 1, "ts": 1300, "dur": 10,
                   "args": {"correlation": 98}})
    elif kind == "device":
        d["deviceProperties"][0]["name"] = "<[" * n
    p = tmp_path / f"{kind}.json.gz"
    with gzip.open(p, "wt") as f:
        json.dump(d, f)
    return p


def _analyze(path: Path, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainprof", "analyze", str(path)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(SRC), **(env or {})})


@pytest.mark.parametrize("kind,n", [("kernel", 200_000), ("runtime", 170_000), ("device", 122_000)])
def test_a_name_past_the_cap_is_one_line_naming_the_file(tmp_path, kind, n):
    path = _attack(tmp_path, kind, n)
    assert path.stat().st_size < 20_000  # the issue's: 1.7 KB of gzip
    r = _analyze(path)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"trainprof: error: {path}: "), r.stderr
    assert "longer than 65,536" in lines[0] and "TRAINPROF_MAX_NAME_CHARS" in lines[0]


@pytest.mark.parametrize("kind,n", [("kernel", 200_000), ("runtime", 170_000), ("device", 122_000)])
def test_the_same_names_with_the_cap_raised_are_analysed_in_linear_time(tmp_path, kind, n):
    """With TRAINPROF_MAX_NAME_CHARS raised past them, the names are read and analysed: the
    patterns see a 16 Ki prefix, the terminal a 2,000-character one. 60 s is far from the old
    cost (the kernel: > 300 s) and far above a pass (~1 s)."""
    r = _analyze(_attack(tmp_path, kind, n), {"TRAINPROF_MAX_NAME_CHARS": "4M"}, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr


_SIGNAL_AT_LAUNCH_MATCHING = textwrap.dedent("""
    import os, signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a test runner may have ignored it
    from trainprof.analysis.graph import cpu_lanes
    from trainprof.cli import main

    real = cpu_lanes.rows_named

    def rows_named(ctx, pattern, rows):
        # the signal arrives just as the analysis thread starts matching the runtime names
        if pattern is cpu_lanes.LAUNCH_CALL:
            with open(sys.argv[2], "w") as f:
                f.write(repr(time.monotonic()))
            os.kill(os.getpid(), getattr(signal, sys.argv[3]))
        return real(ctx, pattern, rows)

    cpu_lanes.rows_named = rows_named
    sys.exit(main(["analyze", sys.argv[1]]))
""")


@pytest.mark.parametrize("sig,code,line", [("SIGTERM", -signal.SIGTERM, "trainprof: terminated (SIGTERM)"),
                                           ("SIGINT", 130, "trainprof: interrupted")])
def test_a_signal_during_matching_is_honoured_at_once(tmp_path, sig, code, line):
    """Before #45 the analysis thread held the GIL inside one `re` call on "Memcpy" x 170,000
    for minutes, and the main thread could not run its SIGTERM handler until it returned."""
    path = _attack(tmp_path, "runtime", 170_000)
    script, stamp = tmp_path / "run.py", tmp_path / "sent"
    script.write_text(_SIGNAL_AT_LAUNCH_MATCHING)
    env = {**os.environ, "PYTHONPATH": str(SRC), "TRAINPROF_MAX_NAME_CHARS": "4M"}
    p = subprocess.Popen([sys.executable, str(script), str(path), str(stamp), sig], stderr=subprocess.PIPE, text=True,
                         env=env)
    try:
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    ended = time.monotonic()
    assert p.returncode == code, err[-2000:]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(line), err
    # the signal was sent inside the run (a stamp exists), and honoured within seconds of it
    # (in a second on an idle machine; CLOCK_MONOTONIC is one clock for every process)
    assert ended - float(stamp.read_text()) < 10
