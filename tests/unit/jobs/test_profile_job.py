"""`trainprof profile`'s parent: the command it starts, the environment it gives, what it
records (status, redacted command) and what it says when nothing was measured."""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest

from trainprof.errors import UsageError
from trainprof.inject import ENV, bootstrap_dir
from trainprof.inject.options import AgentConfig, ProfileOptions
from trainprof.jobs import profile_records as records
from trainprof.jobs.profile import child_env, command_line, exit_code
from trainprof.jobs.profile_config import ProfileJob


def test_command_as_given_or_with_this_python(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    assert command_line([sys.executable, "-m", "mod", "--lr", "1"], 1) == [sys.executable, "-m", "mod", "--lr", "1"]
    assert command_line([str(script), "--x"], 1) == [sys.executable, str(script), "--x"]  # not executable


def test_nproc_wraps_the_command_in_torchrun(tmp_path):
    got = command_line([sys.executable, "train.py", "--lr", "1"], 2)
    assert got[:3] == [sys.executable, "-m", "torch.distributed.run"] and "--standalone" in got
    assert "--nproc-per-node=2" in got and got[-3:] == ["train.py", "--lr", "1"]
    got = command_line([sys.executable, "-m", "pkg.train", "--lr", "1"], 2)
    assert got[-4:] == ["-m", "pkg.train", "--lr", "1"]


@pytest.mark.parametrize("cmd, nproc, msg", [
    ([], 1, "give the command after --"),
    (["no-such-command-xyz"], 1, "no-such-command-xyz: command not found"),
    ([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "t.py"], 2, "not both"),
    ([sys.executable, "-c", "pass"], 2, "--nproc runs `python SCRIPT ARGS`"),
])
def test_commands_it_refuses(cmd, nproc, msg):
    with pytest.raises(UsageError, match=msg):
        command_line(cmd, nproc)


def test_child_env_puts_the_bootstrap_first_and_remembers_the_programs(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/theirs")
    env = child_env(ProfileJob(ProfileOptions(steps=4), command=("x",)), tmp_path / ".parts")
    assert env["PYTHONPATH"] == os.pathsep.join([str(bootstrap_dir()), "/theirs"])
    cfg = AgentConfig.from_env(env[ENV])
    assert cfg.pythonpath == "/theirs" and cfg.options.steps == 4 and cfg.parent_pid == os.getpid()
    monkeypatch.delenv("PYTHONPATH")
    env = child_env(ProfileJob(command=("x",)), tmp_path / ".parts")
    assert env["PYTHONPATH"] == str(bootstrap_dir()) and AgentConfig.from_env(env[ENV]).pythonpath is None


def test_status_and_exit_code():
    o = ProfileOptions()
    assert records.status(None, True, o) == "running" and records.status(0, True, o) == "completed"
    assert records.status(0, True, ProfileOptions(stop_after=True)) == "stopped"
    assert records.status(0, False, ProfileOptions(stop_after=True)) == "completed"  # ended before the window
    assert records.status(-signal.SIGINT, True, o) == "interrupted" and records.status(1, True, o) == "crashed"
    assert records.status(-signal.SIGKILL, False, o) == "crashed"
    assert (exit_code(0), exit_code(3), exit_code(-signal.SIGTERM)) == (0, 3, 143)


def test_secrets_in_the_command_are_not_recorded():
    cmd = ["python", "t.py", "--hf-token", "hf_abc", "--api_key=sk-1", "--lr", "3", "--password", "p", "tok"]
    assert records.redact(cmd) == ["python", "t.py", "--hf-token", "***", "--api_key=***", "--lr", "3",
                                   "--password", "***", "tok"]


def _part(folder, rank, complete=True, local=2):
    (folder / f"rank{rank}.json").write_text(json.dumps(
        {"rank": rank, "record": {}, "profile": {"window_complete": complete, "local_world_size": local}}))


def test_the_window_is_complete_when_every_local_rank_wrote_it(tmp_path):
    assert not records.window_complete(tmp_path)
    _part(tmp_path, 0)
    assert not records.window_complete(tmp_path)  # 1 of 2 ranks
    _part(tmp_path, 1, complete=False)
    assert not records.window_complete(tmp_path)  # rank 1 ended before its window
    _part(tmp_path, 1)
    (tmp_path / "rank1.trace.json.gz").write_bytes(b"")  # not a part
    assert records.window_complete(tmp_path)


@pytest.mark.parametrize("parts, opts, says", [
    (records.Parts({}, [{"top": True, "backward_passes": 10, "optimizer_steps": {}}], {}), ProfileOptions(),
     "never called optimizer.step() (10 backward passes, 0 optimizer steps)"),
    (records.Parts({}, [{"backward_passes": 3, "marker_found": False}], {}), ProfileOptions(step_marker="t:f"),
     "--step-marker t:f: the program never defined it"),
    (records.Parts({0: {"record": None, "profile": {"steps_seen": 1, "boundary": "optimizer.step() of SGD"}}}, [], {}),
     ProfileOptions(), "made 1 steps (one step = optimizer.step() of SGD) and ended before the first measured one"),
    (records.Parts({}, [{"top": True, "backward_passes": 0}], {}), ProfileOptions(), "the program never trained"),
    (records.Parts({}, [], {}), ProfileOptions(), "trainprof was not loaded into the program"),
])
def test_nothing_measured_says_why(parts, opts, says):
    assert says in records.explain(parts, opts)


OPTS = ProfileOptions()
RANK0 = {0: {"rank": 0, "record": None, "profile": {"steps_seen": 1, "boundary": "optimizer.step() of AdamW",
                                                    "warnings": ["the CPU peak was measured under load"]}}}


@pytest.mark.parametrize("parts, rc, says, never", [
    # interrupted in the warm-up: said so, no advice to run longer (issue #37)
    (records.Parts(RANK0, [], {}), -signal.SIGINT, "was interrupted (SIGINT) after 1 steps", "more steps"),
    (records.Parts(RANK0, [], {}), 130, "was interrupted (exit code 130, SIGINT)", "more steps"),
    (records.Parts(RANK0, [], {}), -signal.SIGTERM, "was killed by SIGTERM after 1 steps", "more steps"),
    (records.Parts(RANK0, [], {}), 3, "exited with code 3 after 1 steps", "more steps"),
    (records.Parts(RANK0, [], {}), 0, "run it for more steps", "interrupted"),
    # killed inside the window after the claim: it was loaded, and trained
    (records.Parts({}, [], {}, frozenset({0})), -signal.SIGTERM, "was killed by SIGTERM inside the profiled window",
     "was not loaded"),
    (records.Parts({}, [], {}, frozenset({0})), 0, "ended (exit code 0) inside the profiled window", "was not loaded"),
    (records.Parts({}, [{"pid": 1, "top": True, "backward_passes": 0}], {}), -signal.SIGINT,
     "was interrupted (SIGINT) before it trained", "launcher"),
])
def test_an_ended_program_is_told_how_it_ended(parts, rc, says, never):
    text = records.explain(parts, OPTS, rc)
    assert says in text and never not in text, text
