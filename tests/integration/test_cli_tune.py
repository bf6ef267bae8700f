"""`trainprof tune` for real on the tiny preset (small trials): guard, journal, kill -9 and resume."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from trainprof.cli import main
from trainprof.jobs.tune import run_trial
from trainprof.tune import Knob, LadderConfig, run_ladder
from trainprof.tune.journal import Journal
from trainprof.workload.config import TrainConfig

pytestmark = pytest.mark.slow  # trains the workload in fresh processes: seconds to minutes each

TINY_FIELDS = {"preset": "tiny", "device": "cpu", "micro_batch": 2, "seq_len": 32, "steps": 5, "warmup_steps": 1,
               "eval_batches": 1, "dtype": "fp32", "seed": 1337}
TINY = TrainConfig(**TINY_FIELDS).resolved()
TINY_ARGS = ["--micro-batch", "2", "--seq-len", "32", "--steps", "5", "--warmup-steps", "1", "--eval-batches", "1",
             "--device", "cpu", "--verify-trials", "1"]


def test_a_wrong_learning_rate_is_rejected_by_the_guard(tmp_path):
    wrong_lr = Knob("lr_x30", "a wrong learning rate", lambda c, d: dataclasses.replace(c, lr=0.09), same_math=True,
                    cost="")
    accept_any_speed = LadderConfig(device="cpu", min_gain=-1.0)  # only the guard may reject
    r = run_ladder(run_trial, (wrong_lr,), TINY, accept_any_speed, Journal(tmp_path / "j.jsonl"))
    (t,) = r.trials
    assert t.ok and not t.accuracy_ok and not t.accepted
    assert "trajectory" in t.reason or "validation" in t.reason


def test_cli_tune_writes_results_and_reproducing_command(tmp_path, capsys):
    out = tmp_path / "t"
    # --verify-trials 0 (the last flag wins): the record's shape is tested here, the verify pairs elsewhere
    assert main(["tune", *TINY_ARGS, "--verify-trials", "0", "--knobs", "gc_disable,activation_checkpointing",
                 "--out", str(out)]) == 0
    doc = json.loads((out / "tune.json").read_text())
    assert doc["schema"] == "trainprof.tune/1"
    assert {t["knob"] for t in doc["trials"]} == {"gc_disable", "activation_checkpointing"}
    # the sparse configs users read: the pinned baseline fields, then what a knob changed
    base = {"preset": "tiny", "micro_batch": 2, "seq_len": 32, "dtype": "fp32", "attention": "sdpa",
            "optimizer": "foreach", "seed": 1337, "steps": 5, "warmup_steps": 1, "eval_batches": 1, "device": "cpu"}
    assert doc["baseline"]["config"] == base and list(doc["baseline"]["config"]) == list(base)
    assert doc["trials"][0]["knob"] == "gc_disable" and doc["trials"][0]["config"] == {**base, "gc_disable": True}
    for t in doc["trials"]:
        assert set(t) >= {"knob", "config", "step_time_s", "tokens_per_s", "speedup", "mfu", "peak_memory_bytes",
                          "compile_s", "accuracy_ok", "accepted", "reason"}
    assert doc["best"]["command"].startswith("trainprof run ") and "--seq-len 32" in doc["best"]["command"]
    lines = (out / "journal.jsonl").read_text().splitlines()
    assert len(lines) >= 4 and all(json.loads(x)["trial_id"] for x in lines)
    assert "Optimisation ladder" in capsys.readouterr().out


def test_kill_9_then_resume_loses_nothing(tmp_path):
    out = tmp_path / "k"
    # no verify pair (--verify-trials 0, the last flag wins): what is tested is the journal, not the claim
    cmd = [sys.executable, "-m", "trainprof", "tune", *TINY_ARGS, "--verify-trials", "0", "--knobs", "gc_disable",
           "--out", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    journal = out / "journal.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if journal.exists() and len(journal.read_text().splitlines()) >= 2:
            break
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGKILL)  # the tuner and its running trial
    p.wait()
    before = [json.loads(x)["trial_id"] for x in journal.read_text().splitlines()]
    assert len(before) >= 2 and not (out / "tune.json").exists()
    r = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    after = [json.loads(x)["trial_id"] for x in journal.read_text().splitlines()]
    assert after[: len(before)] == before and len(after) == len(set(after))  # appended, nothing redone
    assert json.loads((out / "tune.json").read_text())["baseline"]["tokens_per_s"] > 0


@pytest.mark.parametrize("argv,needle", [
    (["tune", "--resume", "--out", "/nonexistent/tune"], "--resume"),
    (["tune", "--knobs", "warp_drive"], "--knobs"),
    (["tune", "--steps", "1"], "--steps"),
    (["tune", "--preset", "gpt9"], "--preset"),
])
def test_bad_input(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def _pids_with(text: str) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = open(f"/proc/{d}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmd:
                out.append(int(d))
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_kill_9_of_the_tuner_kills_its_trial_and_the_next_start_cleans_up(tmp_path):
    # A slow trial (2 s sleep per sample) run by run_trial in a child process; kill -9 that
    # process (not its group, as a user's `kill -9 PID` does) and the trial must die too.
    work = tmp_path / "w"
    work.mkdir()
    code = ("import sys; from trainprof.jobs.tune import run_trial; from trainprof.workload.config import TrainConfig; "
            f"run_trial(TrainConfig(**{TINY_FIELDS!r}, data_delay_ms=2000.0).resolved(), workdir=sys.argv[1])")
    tuner = subprocess.Popen([sys.executable, "-c", code, str(work)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    trial = []
    while not trial and time.monotonic() < deadline:
        trial = [p for p in _pids_with(str(work)) if p != tuner.pid]
        time.sleep(0.1)
    assert trial, "the trial never started"
    assert os.getpgid(trial[0]) == trial[0]  # its own process group
    tuner.kill()
    tuner.wait()
    deadline = time.monotonic() + 10
    while _pids_with(str(work)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _pids_with(str(work)), "the trial outlived the tuner"
    left = [p.name for p in work.iterdir()]
    assert left and all(n.startswith(".trainprof-trial.") for n in left)  # SIGKILL ran no cleanup
    from trainprof import atomic

    assert atomic.clean_stale(work) and not list(work.iterdir())  # what the next tune's start does
