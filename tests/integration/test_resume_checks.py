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
    assert meta["schema"] == "trainprof.checkpoint/3" and meta["step"] == 4
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


def test_a_fifo_checkpoint_is_one_line_not_a_hang(done, tmp_path, capsys):
    """Issue #45: a FIFO named checkpoint.pt blocked torch.load forever (no writer ever comes)."""
    import shutil

    copy = tmp_path / "fifo"
    shutil.copytree(done, copy)
    (copy / checkpoint.NAME).unlink()
    os.mkfifo(copy / checkpoint.NAME)
    assert main(["run", *ARGS, "--steps", "6", "--out", str(copy), "--resume"]) == 2
    line = _err(capsys)
    assert "checkpoint.pt" in line and "is a FIFO" in line and "not a regular file" in line, line


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


@pytest.mark.parametrize("meta", ["deleted", "config null"])
def test_the_check_reads_the_checkpoint_itself_not_checkpoint_json(done, tmp_path, capsys, meta):
    """Issue #33: checkpoint.json missing (or `config: null`) let a changed --lr through with
    only a warning; the configuration compared is now the one checkpoint.pt holds."""
    import shutil

    copy = tmp_path / "nometa"
    shutil.copytree(done, copy)
    if meta == "deleted":
        (copy / checkpoint.META).unlink()
    else:
        (copy / checkpoint.META).write_text(json.dumps({"schema": checkpoint.SCHEMA, "step": 4, "config": None}))
    args = [*ARGS, "--lr", "0.01"]
    assert main(["run", *args, "--steps", "6", "--out", str(copy), "--resume"]) == 2
    line = _err(capsys)
    assert "lr 0.003 → 0.01" in line, line  # 0.003: the workload's default lr, stored in checkpoint.pt


def test_checkpoint_loads_without_pickled_classes(done):
    """Every checkpoint trainprof writes loads with weights_only=True (nothing but tensors and
    plain containers), and its RNG states come back as the generators want them."""
    import random

    import numpy as np
    import torch

    ck = torch.load(done / checkpoint.NAME, weights_only=True)
    assert json.loads(ck["config"])["lr"] == 0.003 and ck["step"] == 4
    before = (random.random(), float(np.random.random_sample()), torch.rand(1).item())
    checkpoint.set_rng_state(ck["rng"])
    again = (random.random(), float(np.random.random_sample()), torch.rand(1).item())
    checkpoint.set_rng_state(ck["rng"])  # the same state twice: the same draws twice
    assert (random.random(), float(np.random.random_sample()), torch.rand(1).item()) == again
    assert again != before


class _Payload:
    """What an attacker pickles: unpickling it runs a shell command (here: create a marker)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import shlex

        return (os.system, (f"touch {shlex.quote(str(self.marker))}",))


@pytest.mark.parametrize("form", ["zip", "legacy", "bare pickle"])
def test_a_malicious_checkpoint_is_refused_and_runs_nothing(tmp_path, capsys, form):
    """Issue #33: `run --resume` unpickled checkpoint.pt with weights_only=False, so a crafted
    file beside a valid checkpoint.json ran the attacker's command. Now: one line, exit 2,
    and the command never ran (its marker file does not exist)."""
    import pickle

    import torch

    out, marker = tmp_path / "shared-run", tmp_path / "PWNED"
    out.mkdir()
    payload = {"schema": checkpoint.SCHEMA, "step": 2, "model": _Payload(marker)}
    if form == "zip":
        torch.save(payload, out / checkpoint.NAME)
    elif form == "legacy":
        torch.save(payload, out / checkpoint.NAME, _use_new_zipfile_serialization=False)
    else:
        (out / checkpoint.NAME).write_bytes(pickle.dumps(payload))
    (out / checkpoint.META).write_text(json.dumps({"schema": checkpoint.SCHEMA, "step": 2, "config": None}))
    assert main(["run", *ARGS, "--steps", "4", "--out", str(out), "--resume"]) == 2
    line = _err(capsys)
    assert "checkpoint.pt" in line and "refused" in line and "weights_only=True" in line, line
    if form != "bare pickle":  # (a protocol-4 pickle is refused at its first opcode, before any name)
        assert "(it names posix.system)" in line, line  # what it would have called
    assert not marker.exists()


def test_a_checkpointed_run_lists_its_files_and_force_spares_the_users(done, tmp_path, capsys):
    """A run written as it goes (checkpoints) lists each file in its manifest as it writes it;
    --force on it refuses while a file of the user's is there, and removes nothing."""
    import shutil

    listed = json.loads((done / ".trainprof-manifest.json").read_text())["files"]
    assert listed == ["checkpoint.json", "checkpoint.pt", "journal.jsonl", "run.json"]
    copy = tmp_path / "forced"
    shutil.copytree(done, copy)
    (copy / "notes.txt").write_text("the user's")
    assert main(["run", *ARGS, "--steps", "4", "--out", str(copy), "--force"]) == 2
    assert "'notes.txt', which trainprof did not write" in _err(capsys)
    assert sorted(p.name for p in copy.iterdir()) == sorted([*listed, ".trainprof-manifest.json", "notes.txt"])


def test_resume_anyway_without_resume_is_a_usage_error(tmp_path, capsys):
    assert main(["run", "--resume-anyway", "--out", str(tmp_path / "x")]) == 2
    assert "output.resume_anyway (--resume-anyway) goes with --resume" in _err(capsys)


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
    """SIGTERM to the run's process group, as `timeout` and a shell's `kill -- -PGID` send it,
    once its three DataLoader workers run. Each worker printed a traceback, and torch's
    "DataLoader worker (pid N) is killed by signal: Terminated", raised inside the clean-up,
    left the staging folder and exit 1 (#45)."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "r"
    p = subprocess.Popen([sys.executable, "-m", "trainprof", "run", "--steps", "40", "--micro-batch", "2",
                          "--seq-len", "16", "--device", "cpu", "--data-delay-ms", "50", "--num-workers", "3",
                          "--peak-tflops", "1", "--peak-bandwidth-gbs", "10", "--out", str(out)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    children = f"/proc/{p.pid}/task/{p.pid}/children"  # Linux: the workers are the run's only children
    workers: list[int] = []
    deadline = time.monotonic() + 90
    while len(workers) < 3 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        with open(children) as f:
            workers = [int(w) for w in f.read().split()]
    assert len(workers) == 3 and list(tmp_path.glob(".r.*.partial")), "the run never started its workers"
    # Half a second on, the batches are ready and the run computes: the signal waits for the op to
    # end, and the workers' deaths (SIGCHLD) are then pending with it, to arrive during the clean-up.
    time.sleep(0.5)
    os.killpg(p.pid, signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    # cleaned up, then died of the signal (what torchrun's agent and a shell's $? = 143 expect)
    assert p.returncode == -signal.SIGTERM and "terminated" in err, err
    assert "Traceback" not in err and "DataLoader worker" not in err, err
    assert not list(tmp_path.iterdir())  # the staging folder went with it; no run folder either
    deadline = time.monotonic() + 10  # and no worker lives on (gone, or a zombie waiting for init)
    while any(_running(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_running(w) for w in workers)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False
