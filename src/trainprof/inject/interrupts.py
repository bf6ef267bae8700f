"""Ctrl-C while trainprof's own work runs inside the program: delivered when that work is done.

A KeyboardInterrupt raised in the middle of the agent's bookkeeping (the rank's claim, the
peak check, the trace being written, the records) left it half done, and an import that then
ran at exit ended the program with exit code 1 instead of dying of its interrupt (130), with
CPython's "lost sys.stderr" when it happened during shutdown (issue #37). So the agent's
boundary work runs with SIGINT *deferred*: a signal that arrives is remembered and handed to
the program's own handler as soon as the work ends, at a point where the agent is
consistent. For the default handler that raises KeyboardInterrupt there: in the program's
`optimizer.step()`, as it would have been raised a moment earlier without trainprof. The
longest deferral is the work itself (seconds at most: a peak check in another process, a
trace write), stated in docs/profile.md.

Only the main thread can set handlers (Python's rule); elsewhere the work runs undeferred.
Cost: two sigaction calls per boundary.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Iterator


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[tuple[int, Any]] = []
    try:
        original = signal.signal(signal.SIGINT, lambda signum, frame: got.append((signum, frame)))
    except (ValueError, OSError):  # no signals here (an embedded interpreter)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, original)
        if got and callable(original):
            original(*got[0])  # default_int_handler raises KeyboardInterrupt here, after our work
        elif got and original == signal.SIG_DFL:
            signal.raise_signal(signal.SIGINT)
