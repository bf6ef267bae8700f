"""A planted straggler in a real gloo job (torchrun, 2 and 4 ranks) is named in every trial.

tests/data/scripts/planted_straggler.py: the last rank sleeps 30 ms before each of 20
all_reduces (the machine's noise is a few ms even when loaded), all ranks profiled.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainprof.analysis.collectives import rank_collectives
from trainprof.analysis.collectives_job import match
from trainprof.analysis.context import Context
from trainprof.trace import read_trace

SCRIPT = Path(__file__).parents[1] / "data" / "scripts" / "planted_straggler.py"
TRIALS = 20


@pytest.mark.slow
@pytest.mark.parametrize("nproc", [2, 4])
def test_planted_straggler_is_named_in_every_trial(tmp_path, nproc):
    slow = nproc - 1
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
                        str(SCRIPT), str(tmp_path), str(slow), "30", str(TRIALS)],
                       capture_output=True, text=True, timeout=300)
    # the head of stderr holds a rank's own error; the tail, torchrun's summary
    assert r.returncode == 0, r.stderr[:3000] + "\n...\n" + r.stderr[-1500:]
    files = sorted(tmp_path.glob("rank*.json"))
    assert len(files) == nproc
    blocks = {i: rank_collectives(Context.build(read_trace(str(f)))) for i, f in enumerate(files)}
    rows, _, _ = match(blocks)
    trials = sorted(rows, key=lambda x: x["seq"])[1:]  # the first absorbs the profilers' start
    assert len(trials) == TRIALS
    assert [x["last_rank"] for x in trials] == [slow] * TRIALS
    # the CLI end to end: the job finding names the rank
    a = subprocess.run([sys.executable, "-m", "trainprof", "analyze", str(tmp_path), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert a.returncode == 0, a.stderr[-2000:]
    multi = json.loads(a.stdout)["multi_rank"]
    assert [f["id"] for f in multi["findings"]][:1] == ["stragglers"]
    assert multi["findings"][0]["title"].startswith(f"Rank {slow} ")
    assert multi["collectives"]["consistent"]
