"""A child process that dies with its parent: Linux `prctl(PR_SET_PDEATHSIG, SIGKILL)`.

Without it a `kill -9` (or an unhandled SIGTERM) of the parent leaves the child running with
PPID 1: a tune trial ran on ~30 s (issue #19). Used by jobs/trial.py (trials, before exec or
first thing in a multiprocessing child) and forked.py (the analysis's forked graph work).
"""

from __future__ import annotations

import os
import signal
import sys


def prctl():  # noqa: ANN201
    """libc's prctl, looked up in the parent: the child between fork and exec must not load
    libraries (the dynamic loader's lock may be held by another thread at fork time)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent(prctl, parent: int) -> None:  # noqa: ANN001  # pragma: no cover - runs in the child
    """In the child: SIGKILL it when its parent dies. Linux prctl(PR_SET_PDEATHSIG);
    elsewhere a no-op (the process group still lets the parent stop it on timeout or Ctrl-C)."""
    if prctl is None:
        return
    prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
