"""The command's SIGTERM handler (cli._terminate_as_exception): raises cli.Terminated so that
`finally` blocks run, and silences SIGCHLD on the way out: torch's SIGCHLD handler raised
"DataLoader worker (pid N) is killed by signal: Terminated" inside that clean-up when the
workers died with the process group, leaving the staging folder and exit 1 (#45). Handlers
are restored after each test; the end-to-end run is tests/integration/test_resume_checks.py."""

from __future__ import annotations

import signal
import sys

import pytest

from trainprof import cli


@pytest.fixture
def handlers():
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGCHLD)}
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # what a fresh command starts from
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def _torch_sigchld(signum, frame):  # what torch.utils.data installs in the main process
    raise RuntimeError("DataLoader worker (pid 1) is killed by signal: Terminated.")


def test_a_worker_dying_with_the_sigterm_does_not_cut_the_clean_up_short(handlers, monkeypatch):
    """SIGTERM and SIGCHLD pending at once, as when the process group is signalled during a
    long op: the clean-up runs to its end, with nothing on stderr (CPython reports a pending
    signal whose Python handler went away as an unraisable "Signal 17 ignored ...")."""
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    signal.signal(signal.SIGCHLD, _torch_sigchld)
    cli._terminate_as_exception()
    both = {signal.SIGTERM, signal.SIGCHLD}
    cleaned = []
    signal.pthread_sigmask(signal.SIG_BLOCK, both)
    try:
        with pytest.raises(cli.Terminated):
            try:
                signal.raise_signal(signal.SIGTERM)
                signal.raise_signal(signal.SIGCHLD)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, both)  # both arrive: SIGTERM's handler runs first
            finally:
                cleaned.append(sum(range(10)))  # bytecode: the pending SIGCHLD's handler runs here
                cleaned.append(True)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, both)
    assert cleaned == [45, True] and not unraisable
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # a second SIGTERM kills at once
    signal.signal(signal.SIGCHLD, _torch_sigchld)  # before any SIGTERM, torch's news still arrives
    with pytest.raises(RuntimeError):
        signal.raise_signal(signal.SIGCHLD)


def test_an_embedding_programs_own_sigterm_handler_is_kept(handlers):
    def theirs(signum, frame):
        pass

    signal.signal(signal.SIGTERM, theirs)
    cli._terminate_as_exception()
    assert signal.getsignal(signal.SIGTERM) is theirs
