"""`trainprof run --bind-numa`: 2 gloo ranks on CPU, each bound to its own cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from trainprof.cli import main
from trainprof.hardware.numa import parse_cpulist

pytestmark = pytest.mark.slow  # trains the workload in fresh processes: seconds to minutes each


ARGS = ["--steps", "3", "--seq-len", "32", "--micro-batch", "2", "--eval-batches", "0", "--device", "cpu",
        "--no-report"]


def test_two_ranks_get_disjoint_cores(tmp_path):
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "trainprof", "run", *ARGS, "--nproc", "2", "--bind-numa",
                        "--out", str(out), "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    d = json.loads((out / "run.json").read_text())
    assert d["config"]["bind_numa"] is True and d["world_size"] == 2
    ranks = d["distributed"]["per_rank"]
    cpus = [set(parse_cpulist(x["cpu_affinity"])) for x in ranks]
    allowed = os.sched_getaffinity(0)
    assert all(c and c <= allowed for c in cpus) and not cpus[0] & cpus[1]
    if len(allowed) == 2:  # this 2-core box: one core each
        assert [sorted(c) for c in cpus] == [[min(allowed)], [max(allowed)]]
    for x, c in zip(ranks, cpus):
        b = x["numa_binding"]
        assert set(parse_cpulist(b["cpus"])) == c and b["local_world_size"] == 2 and b["gpu"] is None
        assert b["threads"] == len(c)  # intra-op threads follow the rank's cores (no --threads)
    env = d["environment"]  # rank 0 writes run.json
    assert env["numa_binding"]["local_rank"] == 0 and env["cpu_affinity"] == ranks[0]["cpu_affinity"]
    assert env["cpu_threads"] == len(cpus[0])


def test_bind_numa_that_cannot_fit_fails_before_launch(tmp_path, capsys):
    n = len(os.sched_getaffinity(0)) + 1
    assert main(["run", *ARGS, "--nproc", str(n), "--bind-numa", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--bind-numa" in err and "each rank needs at least one" in err
    assert not (tmp_path / "o").exists()
