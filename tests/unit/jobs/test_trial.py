"""The one trial runner of tune and the memory study: process groups, timeouts, clear outcomes."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

import pytest

from trainprof.jobs.trial import TEMP_NAME, run_command, run_function

# A trial that starts a grandchild (as a DataLoader worker would), writes its pid, then hangs.
HANG = ("import subprocess, sys, time; g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "open(sys.argv[1], 'w').write(str(g.pid)); time.sleep(60)")


def _gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[-1].startswith("Z"):  # a zombie waiting for its (dead) parent's reaper
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow  # waits out a trial's timeout in a fresh process group
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_timeout_kills_the_whole_process_group(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    t0 = time.monotonic()
    out = run_command(lambda folder: [sys.executable, "-c", HANG, str(pid_file)], lambda folder: None,
                      timeout_s=3.0, workdir=tmp_path)
    assert out.status == "timeout" and out.reason == "timed out after 3 s" and out.record is None
    assert 3.0 <= out.wall_s < 3.0 + 10 and time.monotonic() - t0 < 20
    # the grandchild was in the trial's group: killed with it, not left running with PPID 1
    assert pid_file.exists() and _gone(int(pid_file.read_text()))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(f".{TEMP_NAME}.")]  # its folder removed


def test_a_trial_that_exits_non_zero_gives_its_last_error_line(tmp_path):
    code = "import sys; print('progress...', file=sys.stderr); sys.exit('trainprof: error: --micro-batch 4096 does not fit')"
    out = run_command(lambda folder: [sys.executable, "-c", code], lambda folder: pytest.fail("not read"),
                      timeout_s=60, workdir=tmp_path)
    assert out.status == "failed" and out.returncode == 1
    assert out.reason == "trainprof: error: --micro-batch 4096 does not fit"  # the last line, not the traceback
    silent = run_command(lambda folder: [sys.executable, "-c", "import os; os._exit(3)"], lambda folder: None,
                         timeout_s=60, workdir=tmp_path)
    assert (silent.status, silent.returncode, silent.reason) == ("failed", 3, "exited with code 3, no message")


def test_a_finished_trial_is_read_from_its_folder_then_the_folder_goes(tmp_path):
    seen: list[Path] = []

    def read(folder: Path) -> str:
        seen.append(folder)
        return (folder / "run.json").read_text()

    code = "import sys, pathlib; pathlib.Path(sys.argv[1], 'run.json').write_text('{\"ok\": 1}')"
    out = run_command(lambda folder: [sys.executable, "-c", code, str(folder)], read, timeout_s=60, workdir=tmp_path)
    assert (out.status, out.record, out.returncode) == ("ok", '{"ok": 1}', 0)
    (folder,) = seen
    assert folder.parent == tmp_path and folder.name.startswith(f".{TEMP_NAME}.{os.getpid()}.")
    assert not folder.exists()


def test_stale_trial_folders_of_a_dead_tuner_are_removed_at_the_next_start(tmp_path):
    # pid 2**22 + 1 is above Linux's pid_max ceiling: no process has it
    stale = tmp_path / f".{TEMP_NAME}.{2**22 + 1}.abc123.partial"
    (stale / "run").mkdir(parents=True)
    run_command(lambda folder: [sys.executable, "-c", "pass"], lambda folder: None, timeout_s=60, workdir=tmp_path)
    assert not stale.exists()


# ---- a function in a child (the memory probes' way) ----------------------------------------
def _answer(conn, x):  # noqa: ANN001
    conn.send({"double": 2 * x, "pgid_is_own": os.getpgid(0) == os.getpid()})


def _hang(conn):  # noqa: ANN001
    time.sleep(60)


def _die(conn):  # noqa: ANN001
    os._exit(5)


FORK = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None


@pytest.mark.skipif(FORK is None, reason="needs the fork start method")
def test_a_function_trial_sends_its_record_from_its_own_process_group():
    out = run_function(_answer, (21,), timeout_s=30, context=FORK)
    assert out.status == "ok" and out.record == {"double": 42, "pgid_is_own": True}


@pytest.mark.slow  # waits out a forked trial's timeout
@pytest.mark.skipif(FORK is None, reason="needs the fork start method")
def test_a_function_trial_times_out_and_one_that_dies_says_how():
    out = run_function(_hang, (), timeout_s=1.0, context=FORK)
    assert (out.status, out.reason) == ("timeout", "timed out after 1 s") and out.wall_s < 10
    out = run_function(_die, (), timeout_s=30, context=FORK)
    assert (out.status, out.returncode, out.reason) == ("failed", 5, "exited with code 5 and no record")


@pytest.mark.skipif(not sys.platform.startswith("linux") or "forkserver" not in mp.get_all_start_methods(),
                    reason="PR_SET_PDEATHSIG is Linux's; the probes' forkserver")
def test_a_forkserver_trial_dies_with_its_parent(tmp_path):
    # The memory probes' launch: parent → forkserver → trial. kill -9 the parent only: the
    # forkserver exits (its pipe from the parent closes) and the trial's PDEATHSIG fires.
    import subprocess

    (tmp_path / "hangmod.py").write_text(
        "import os, sys, time\n"
        "def hang(conn, path):\n"
        "    open(path, 'w').write(str(os.getpid()))\n"
        "    time.sleep(60)\n")
    pid_file = tmp_path / "trial.pid"
    code = ("import multiprocessing as mp, sys; from trainprof.jobs.trial import run_function; import hangmod; "
            "run_function(hangmod.hang, (sys.argv[1],), timeout_s=60, context=mp.get_context('forkserver'))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    parent = subprocess.Popen([sys.executable, "-c", code, str(pid_file)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid_file.exists(), "the trial never started"
    trial = int(pid_file.read_text())
    assert os.getpgid(trial) == trial  # its own process group
    parent.kill()
    parent.wait()
    assert _gone(trial, within_s=10), "the trial outlived its parent"
