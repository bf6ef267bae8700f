"""kill -9 in the middle of a checkpointed run, --resume, same final loss; ETTR accounts for it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from trainprof.cli import main

pytestmark = pytest.mark.slow  # trains the workload in fresh processes: seconds to minutes each


ARGS = ["--steps", "14", "--micro-batch", "2", "--seq-len", "32", "--eval-batches", "1", "--device", "cpu",
        "--data-delay-ms", "15",  # ~30 ms a step of sleep: time to kill it mid-run
        "--threads", "1"]  # the reference runs in this process, the others in fresh ones: the same reduction order


def _steps_logged(journal):
    if not journal.exists():
        return 0
    return sum(1 for line in journal.read_text().splitlines() if '"event": "step"' in line)


def test_kill_resume_matches_uninterrupted_and_ettr_counts_the_loss(tmp_path, capsys):
    ref = tmp_path / "ref"
    assert main(["run", *ARGS, "--out", str(ref), "--json"]) == 0
    capsys.readouterr()
    out = tmp_path / "ck"
    cmd = [sys.executable, "-m", "trainprof", "run", *ARGS, "--checkpoint-every", "4", "--out", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = out / "journal.jsonl"
    deadline = time.monotonic() + 120
    while _steps_logged(journal) < 10 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert (out / "checkpoint.pt").exists() and not (out / "run.json").exists()
    r = subprocess.run([*cmd, "--resume", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-1500:]
    a = json.loads((ref / "run.json").read_text())
    b = json.loads((out / "run.json").read_text())
    assert len(b["steps"]) == 14
    assert [s["loss"] for s in b["steps"]] == [s["loss"] for s in a["steps"]]  # exactly the same run
    assert b["summary"]["val_loss"] == a["summary"]["val_loss"]
    assert main(["ettr", str(out), "--json"]) == 0
    e = json.loads(capsys.readouterr().out)
    assert e["sessions"] == 2 and e["failures"] == 1 and e["finished"]
    assert e["lost_s"]["redone_steps"] > 0  # steps after the last checkpoint ran twice
    assert e["lost_s"]["checkpointing"] > 0 and 0 < e["ettr"] < 1
    assert (out / "ettr.json").exists()


def test_resume_and_ettr_bad_input(tmp_path, capsys):
    assert main(["run", "--resume", "--out", str(tmp_path)]) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["ettr", str(tmp_path)]) == 2
    assert "journal.jsonl" in capsys.readouterr().err
