"""The tests that fork (tests/conftest.py FORK_TESTS) in a fresh pytest process: an xdist worker
keeps threads that earlier test files left running, and a process with threads forks no child
(trainprof.forked.can_fork). One process for the files, 5-9 s here (its tests ~3 s, the rest
pytest and conftest's torch import)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conftest import FORK_TESTS, FORK_TESTS_ENV

TESTS = Path(__file__).resolve().parents[1]


def test_the_fork_tests_pass_in_a_process_without_threads():
    env = {**os.environ, FORK_TESTS_ENV: "1"}
    # a short base folder, as tests/conftest.py makes one: the printed paths must not wrap at 80
    # columns (test_analyze_reports_beside replaces the folder's path in the terminal's text)
    base = tempfile.mkdtemp(prefix="tpf-")
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-rfEs",
                            "--basetemp", base, *(str(TESTS / f) for f in FORK_TESTS)],
                           cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    summary = r.stdout.strip().splitlines()[-1]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    assert passed >= 20 and "skipped" not in summary and "failed" not in summary, summary
