"""trainprof.forked: the call's value (its exact types), or its exception as the same one-line
error, from a forked child; no child left behind by close(), SIGTERM or Ctrl-C of the caller;
a thread, or the call made at once, where no fork is safe."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import msgspec
import pytest

from trainprof import forked
from trainprof.errors import ConfigError, InputError, UsageError
from trainprof.forked import Forked, can_fork, spare_core
from trainprof.jsontext import dumps

SRC = Path(__file__).resolve().parents[2] / "src"
needs_fork = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks only on Linux")


@pytest.fixture(autouse=True)
def _no_torch(monkeypatch):
    """tests/conftest.py imports torch, and a process that has forks no child (forked.can_fork):
    hidden from sys.modules here, where nothing uses it. A thread an earlier test in this worker
    left running also forbids a fork; a test that needs one then says which thread (a call meant
    for a child would run here instead: `die` below would kill the test process itself)."""
    monkeypatch.delitem(sys.modules, "torch", raising=False)


def _fork_allowed() -> None:
    if not can_fork():
        names = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
        pytest.fail(f"no fork in this process: threads left running by an earlier test: {names}")


class _Row(msgspec.Struct):
    us: float
    count: int
    shares: dict[str, float]


def _gone(pid: int) -> bool:
    """No such process, or a zombie (an orphan's new parent may not reap it at once)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


@needs_fork
def test_value_comes_from_a_child_with_its_exact_types():
    # 0.1 + 0.2 = 0.30000000000000004 and 1e-300 keep their 64 bits; 3 stays an int (JSON `3`, not `3.0`)
    def work():
        return os.getpid(), [_Row(0.1 + 0.2, 3, {"a": 1e-300})]

    pid, rows = Forked(work, returns=tuple[int, list[_Row]]).result()
    assert pid != os.getpid()
    assert rows == work()[1]
    assert dumps(rows) == dumps(work()[1])


def _raise(e: BaseException):
    raise e


@needs_fork
@pytest.mark.parametrize("error, cls", [
    (InputError("trace.json: truncated at byte 7"), InputError),
    (ConfigError("tune.trials", "must be > 0", got=0), UsageError),  # the same line and exit code 2
    (FileNotFoundError(2, "No such file or directory", "a.json"), FileNotFoundError),
    (MemoryError("out of memory"), MemoryError),
])
def test_an_error_comes_back_as_the_same_one_line_error(error, cls):
    with pytest.raises(cls) as got:
        Forked(_raise, error, returns=None).result()
    assert str(got.value) == str(error)
    assert getattr(got.value, "exit_code", None) == getattr(error, "exit_code", None)


@needs_fork
def test_an_error_of_another_class_is_named_in_a_runtime_error():
    class Odd(Exception):
        pass

    with pytest.raises(RuntimeError, match="in a forked child: Odd: bad graph"):
        Forked(_raise, Odd("bad graph"), returns=None).result()


@needs_fork
def test_a_child_killed_before_it_answers_is_an_error():
    _fork_allowed()
    caller = os.getpid()

    def die():  # as the OOM killer ends it; never the test process (a call made here, not forked)
        if os.getpid() != caller:
            os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(RuntimeError, match="died without an answer"):
        Forked(die, returns=None).result()


@needs_fork
def test_a_value_that_does_not_encode_is_computed_by_the_caller():
    # a lone surrogate (a name that was not UTF-8, #45) has no msgpack form
    pid, name = Forked(lambda: (os.getpid(), "k\udcff"), returns=tuple[int, str]).result()
    assert (pid, name) == (os.getpid(), "k\udcff")


def test_without_a_fork_a_thread_or_the_call_at_once(monkeypatch):
    monkeypatch.setattr(forked, "can_fork", lambda: False)
    me = threading.get_ident()
    assert Forked(threading.get_ident, returns=int).result() != me
    done = []
    job = Forked(lambda: done.append(threading.get_ident()) or "ok", returns=str, thread=False)
    assert done == [me]  # made at once, here: the order of the serial path
    assert job.result() == "ok"
    with pytest.raises(InputError, match="bad"):
        Forked(_raise, InputError("bad"), returns=None, thread=False).result()


def test_no_fork_while_another_thread_runs_or_after_torch(monkeypatch):
    assert can_fork() == sys.platform.startswith("linux")
    monkeypatch.setitem(sys.modules, "torch", sys)  # any module: only its presence is read
    assert not can_fork()
    monkeypatch.delitem(sys.modules, "torch")
    release = threading.Event()
    t = threading.Thread(target=release.wait, args=(5,))
    t.start()
    try:
        assert not can_fork()
    finally:
        release.set()
        t.join()
    # a thread `threading` does not list (started by _thread, as execnet's are) forbids it too
    import _thread

    started, release = threading.Event(), threading.Event()
    _thread.start_new_thread(lambda: (started.set(), release.wait(5)), ())
    started.wait(5)
    try:
        assert threading.active_count() == 1 and not can_fork()
    finally:
        release.set()
    deadline = time.monotonic() + 5
    while len(sys._current_frames()) > 1 and time.monotonic() < deadline:  # the thread has returned
        time.sleep(0.01)
    assert can_fork()


@needs_fork
def test_close_kills_a_child_still_running():
    job = Forked(time.sleep, 60, returns=None)
    pid = job._pid
    assert not _gone(pid)
    job.close()
    assert _gone(pid)


CALLER = """
import sys, time
from trainprof.forked import Forked
print("a")  # buffered (stdout is a pipe): written once, by this process
Forked(print, "b", returns=None).result()
print("c")
with Forked(time.sleep, 60, returns=None) as job:
    print(job._pid, flush=True)
    job.result()
"""


@needs_fork
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_the_child_dies_with_its_caller(sig):
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    p = subprocess.Popen([sys.executable, "-c", CALLER], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True, env=env)
    try:
        lines = [p.stdout.readline() for _ in range(4)]
        assert lines[:3] == ["a\n", "b\n", "c\n"]  # the child's line once, in its place
        child = int(lines[3])
        p.send_signal(sig)  # SIGTERM: the caller dies at once (PR_SET_PDEATHSIG); SIGINT: KeyboardInterrupt, close()
        p.wait(30)
        deadline = time.monotonic() + 10
        while not _gone(child) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _gone(child)
    finally:
        p.kill()
        p.wait()


WARMED: list[int] = []


def _warm_up():
    WARMED.append(os.getpid())


def _after_warm(tag: str, a: str, b: int):
    return tag, a, b, WARMED  # the child's list: its warm-up ran before the arguments came


@needs_fork
def test_warm_runs_first_then_the_call_with_the_arguments_sent():
    job = Forked(_after_warm, "t", returns=tuple[str, str, int, list[int]], warm=_warm_up)
    job.send("x", 7)
    tag, a, b, warmed = job.result()
    assert (tag, a, b) == ("t", "x", 7)
    assert len(warmed) == 1 and warmed[0] != os.getpid() and WARMED == []  # in the child, not here


@needs_fork
def test_a_warm_child_never_sent_to_is_ended_by_close():
    job = Forked(_after_warm, "t", returns=None, warm=_warm_up)
    pid = job._pid
    job.close()
    assert _gone(pid)


@needs_fork
def test_a_failed_warm_up_is_the_callers_error():
    job = Forked(_after_warm, "t", returns=None, warm=lambda: _raise(InputError("no templates")))
    job.send("x" * 200_000, 1)  # more than a pipe holds: the child is gone, the write fails quietly
    with pytest.raises(InputError, match="no templates"):
        job.result()


def test_without_a_fork_send_makes_the_call(monkeypatch):
    monkeypatch.setattr(forked, "can_fork", lambda: False)
    job = Forked(_after_warm, "t", returns=None, warm=_warm_up, thread=False)
    job.send("x", 1)
    assert job.result() == ("t", "x", 1, [])  # no warm-up here: it only prepares a child


@pytest.mark.parametrize("cores, loadavg, spare", [
    ({0, 1}, "0.52 0.40 0.31 1/120 999", True),  # only this process runnable: the second core is free
    ({0, 1}, "2.10 1.90 1.70 2/120 999", False),  # one other task runnable takes it
    ({0, 1, 2, 3}, "2.10 1.90 1.70 3/120 999", True),  # two others on four cores leave one
    ({0}, "0.00 0.00 0.00 1/120 999", False),  # one core: a child only takes turns with us
])
def test_spare_core_counts_the_runnable_tasks_now(cores, loadavg, spare, tmp_path, monkeypatch):
    (tmp_path / "loadavg").write_text(loadavg + "\n")
    monkeypatch.setattr(forked, "LOADAVG", str(tmp_path / "loadavg"))
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: cores, raising=False)
    assert spare_core() is spare
