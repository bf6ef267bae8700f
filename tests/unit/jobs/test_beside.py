"""jobs/beside.py: a function run in a forked child gives the same value as run in place, and
any failure of the child falls back to the caller computing it."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from trainprof.jobs.beside import Beside, fork_usable

linux = pytest.mark.skipif(sys.platform != "linux", reason="fork is used on Linux only")


def pid_and_square(x: int) -> tuple[int, int]:
    return os.getpid(), x * x


def dies(x: int) -> int:
    if os.getpid() != PARENT:
        os._exit(3)  # the child dies without a result
    return x + 1


def raises_in_child(x: int) -> int:
    if os.getpid() != PARENT:
        raise RuntimeError("only in the child")
    return -x


def unpicklable(_: int):
    return (lambda: 1) if os.getpid() != PARENT else "here"


def sleeps(_: int) -> int:
    time.sleep(60)
    return 0


PARENT = os.getpid()


@linux
def test_child_computes_the_value():
    with Beside(pid_and_square, 7, fork=True) as job:
        assert job.forked
        pid, value = job.result()
    assert value == 49 and pid != os.getpid()  # computed in another process


def test_in_place_when_not_forking(monkeypatch):
    monkeypatch.setenv("TRAINPROF_SERIAL", "1")
    assert not fork_usable()
    with Beside(pid_and_square, 3) as job:
        assert not job.forked
        assert job.result() == (os.getpid(), 9)


@linux
@pytest.mark.parametrize("fn, expected", [(dies, 6), (raises_in_child, -5), (unpicklable, "here")])
def test_a_failed_child_means_computed_here(fn, expected):
    with Beside(fn, 5, fork=True) as job:
        assert job.result() == expected


@linux
def test_leaving_early_stops_the_child():
    with pytest.raises(KeyError):
        with Beside(sleeps, 0, fork=True) as job:
            pid = job.pid
            raise KeyError("the caller failed")
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # killed and reaped: no zombie left


@linux
def test_no_fork_with_other_threads():
    import threading

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not fork_usable()
    finally:
        stop.set()
        t.join()
