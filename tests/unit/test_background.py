"""trainprof.background: the call's value or its exception, in the caller's thread."""

import threading

import pytest

from trainprof.background import Background


def test_result_is_the_calls_value_computed_on_another_thread():
    caller = threading.get_ident()
    job = Background(lambda a, b: (a + b, threading.get_ident()), 2, 3)
    value, ran_on = job.result()
    assert value == 5
    assert ran_on != caller


def test_exception_is_raised_by_result_in_the_caller():
    def fail():
        raise ValueError("bad trace")

    job = Background(fail)
    with pytest.raises(ValueError, match="bad trace"):
        job.result()


def test_result_waits_for_the_call():
    started, release = threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(5)
        return "done"

    job = Background(slow)
    assert started.wait(5)
    threading.Timer(0.05, release.set).start()
    assert job.result() == "done"
