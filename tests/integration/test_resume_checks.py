"""Issue #19: `run --resume` continues only the run that was checkpointed."""

from __future__ import annotations

import json
import os
import re
import stat

import pytest

from trainprof.cli import main
from trainprof.workload import checkpoint

pytestmark = pytest.mark.slow  # trains the workload in fresh processes: seconds to minutes each

ARGS = ["--micro-batch", "2", "--seq-len", "16", "--eval-batches", "1", "--device", "cpu", "--warmup-steps", "1",
        "--checkpoint-every", "2", "--no-report", "--system-interval", "0"]


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    """A finished 4-step checkpointed run (checkpoint at step 4)."""
    out = tmp_path_factory.mktemp("resume") / "run"
    assert main(["run", *ARGS, "--steps", "4", "--out", str(out), "--json"]) == 0
    return out


def _err(capsys) -> str:
    err = capsys.readouterr().err
    # off a terminal a run prints progress lines ("HH:MM:SS trainprof run: training started ...",
    # report/progress.py) before an error that comes after its first step: not part of the error
    lines = [ln for ln in err.splitlines() if ln.strip() and not re.match(r"\d\d:\d\d:\d\d trainprof ", ln)]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_checkpoint_stores_schema_and_config(done):
    meta = json.loads((done / checkpoint.META).read_text())
    assert meta["schema"] == "trainprof.checkpoint/2" and meta["step"] == 4
    assert meta["config"]["seed"] == 1337 and meta["config"]["micro_batch"] == 2 and meta["config"]["world_size"] == 1
    mode = stat.S_IMODE((done / checkpoint.NAME).stat().st_mode)
    assert mode == 0o666 & ~_umask(), oct(mode)  # not mkstemp's 0600
    assert not [p for p in done.iterdir() if p.name.endswith(".tmp")]


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


@pytest.mark.parametrize("change, field", [
    (["--seed", "7"], "seed 1337 → 7"),
    (["--micro-batch", "4"], "micro_batch 2 → 4"),
    (["--lr", "0.01"], "lr 0.003 → 0.01"),
    (["--grad-accum", "2"], "grad_accum 1 → 2"),
])
def test_resume_with_another_configuration_is_refused(done, capsys, change, field):
    args = [a for a in ARGS]
    for i in range(0, len(change), 2):
        if change[i] in args:
            args[args.index(change[i]) + 1] = change[i + 1]
        else:
            args += change[i:i + 2]
    before = (done / "journal.jsonl").read_text()
    assert main(["run", *args, "--steps", "6", "--out", str(done), "--resume"]) == 2
    line = _err(capsys)
    assert "--resume" in line and field in line and "--resume-anyway" in line, line
    # refused before any step: no step was journalled
    assert (done / "journal.jsonl").read_text().count('"step"') == before.count('"step"')


def test_fewer_steps_than_done_is_refused(done, capsys):
    assert main(["run", *ARGS, "--steps", "2", "--out", str(done), "--resume"]) == 2
    assert "--steps 2" in (line := _err(capsys)) and "already holds 4 steps" in line


def test_resume_anyway_continues_and_says_so(done, tmp_path, capsys):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(done, copy)
    args = [*ARGS, "--seed", "7"]
    assert main(["run", *args, "--steps", "5", "--out", str(copy), "--resume", "--resume-anyway", "--json"]) == 0
    rec = json.loads((copy / "run.json").read_text())
    assert len(rec["steps"]) == 5
    assert any("--resume-anyway" in w and "seed 1337 → 7" in w for w in rec["warnings"])


def test_truncated_checkpoint_is_one_line(done, tmp_path, capsys):
    import shutil

    copy = tmp_path / "trunc"
    shutil.copytree(done, copy)
    data = (copy / checkpoint.NAME).read_bytes()
    (copy / checkpoint.NAME).write_bytes(data[: len(data) // 2])
    assert main(["run", *ARGS, "--steps", "6", "--out", str(copy), "--resume"]) == 2
    line = _err(capsys)
    assert "checkpoint.pt" in line and "truncated or corrupt" in line


def test_checkpoint_of_another_preset_is_one_line(done, tmp_path, capsys):
    import shutil

    copy = tmp_path / "other"
    shutil.copytree(done, copy)
    (copy / checkpoint.META).unlink()  # as if written before checkpoint.json existed: only the load can tell
    # --pad-vocab changes the embedding's shape: 256 stays 256 for tiny, so shrink the model instead
    ck = __import__("torch").load(copy / checkpoint.NAME, weights_only=False)
    ck["model"] = {k: v[..., :1] if v.ndim else v for k, v in ck["model"].items()}
    __import__("torch").save(ck, copy / checkpoint.NAME)
    assert main(["run", *ARGS, "--steps", "6", "--out", str(copy), "--resume"]) == 2
    line = _err(capsys)
    assert "another model" in line and "checkpoint.pt" in line, line


def test_resume_anyway_without_resume_is_a_usage_error(tmp_path, capsys):
    assert main(["run", "--resume-anyway", "--out", str(tmp_path / "x")]) == 2
    assert "--resume-anyway goes with --resume" in _err(capsys)


def test_enospc_during_a_checkpoint_save_is_one_line(tmp_path, monkeypatch, capsys):
    import torch

    def full(obj, f, *a, **k):
        raise RuntimeError("[enforce fail at inline_container.cc:603] . PytorchStreamWriter failed writing "
                           "file data/0: file write failed")

    monkeypatch.setattr(torch, "save", full)
    out = tmp_path / "r"
    assert main(["run", *ARGS, "--steps", "2", "--out", str(out)]) == 2
    line = _err(capsys)
    assert "checkpoint.pt" in line and "cannot write the checkpoint" in line
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_sigterm_leaves_no_partial_folder(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "r"
    p = subprocess.Popen([sys.executable, "-m", "trainprof", "run", "--steps", "40", "--micro-batch", "2",
                          "--seq-len", "16", "--device", "cpu", "--data-delay-ms", "50", "--out", str(out)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".r.*.partial/journal.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp_path.glob(".r.*.partial")), "the run never started"
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    # cleaned up, then died of the signal (what torchrun's agent and a shell's $? = 143 expect)
    assert p.returncode == -signal.SIGTERM and "terminated" in err and "Traceback" not in err, err
    assert not list(tmp_path.iterdir())  # the staging folder went with it; no run folder either
