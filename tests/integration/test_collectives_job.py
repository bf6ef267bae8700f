"""A planted straggler in a real gloo job (torchrun, 3 ranks) is named, and only it.

tests/data/scripts/planted_straggler.py: the last rank sleeps 30 ms before each of 20
all_reduces (one per profiler step; it writes how long it really slept: the planted truth),
all ranks profiled. One job of 3 ranks (it was 2 and 4: one run covers both the pair and
the "others" cases and costs half; ~9 s on the 2-core box).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from trainprof.analysis.job.collectives import rank_collectives
from trainprof.analysis.job.collectives_job import match
from trainprof.analysis.timeline.context import Context
from trainprof.trace import read_trace

from tests.plain import plain

SCRIPT = Path(__file__).parents[1] / "data" / "scripts" / "planted_straggler.py"
TRIALS, SLEEP_MS, NPROC = 20, 30, 3


@pytest.mark.slow
def test_planted_straggler_is_named_and_only_it(tmp_path):
    slow = NPROC - 1
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={NPROC}",
                        str(SCRIPT), str(tmp_path), str(slow), str(SLEEP_MS), str(TRIALS)],
                       capture_output=True, text=True, timeout=300)
    # the head of stderr holds a rank's own error; the tail, torchrun's summary
    assert r.returncode == 0, r.stderr[:3000] + "\n...\n" + r.stderr[-1500:]
    files = sorted(tmp_path.glob("rank*.json"))
    assert len(files) == NPROC
    blocks = {i: rank_collectives(Context.build(read_trace(str(f)))) for i, f in enumerate(files)}
    slept = json.loads((tmp_path / "sleeps.txt").read_text())
    rows = plain(match(blocks)[0])
    trials = sorted(rows, key=lambda x: x["seq"])  # the warm-up step is not in the window
    assert len(trials) == TRIALS
    # last at (nearly) every trial: on the shared 2-core box (load ~8 measured) another rank
    # is sometimes descheduled for longer than the sleep; 20 of 20 on an idle machine
    assert sum(x["last_rank"] == slow for x in trials) >= TRIALS - 2
    # each trial: the others waited for the sleep (within 10%)
    assert statistics.median(x["skew_us"] for x in trials) == pytest.approx(statistics.median(slept), rel=0.10)
    # the CLI end to end, with a broken invariant raising: the job finding names the rank, only it
    env = {**os.environ, "TRAINPROF_STRICT_INVARIANTS": "1"}
    a = subprocess.run([sys.executable, "-m", "trainprof", "analyze", str(tmp_path), "--json"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert a.returncode == 0, a.stderr[-2000:]
    multi = json.loads(a.stdout)["multi_rank"]
    job = multi["collectives"]
    assert [(f["id"], f["title"].split()[1]) for f in multi["findings"]] == [("stragglers", str(slow))], job
    assert job["consistent"] and job["clipped_waits"] == 0
    # the mean other rank waited for the 20 planted sleeps (within 10%), never longer than
    # its own window
    culprit = job["per_rank"][slow]
    assert culprit["others_wait_us"] == pytest.approx(sum(slept), rel=0.10)
    assert all(x["wait_us"] <= x["span_us"] for x in job["per_rank"])
    assert multi["findings"][0]["estimated_gain_pct"] == round(culprit["gain_pct"], 2)
