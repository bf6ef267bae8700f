"""Run one function in a forked child while the caller goes on: a second core for one trace.

`trainprof analyze TRACE` on a single trace used one core once the trace was read. The
critical path and its what-ifs (about 2/3 of the analyses on the DDP trace) need only the
analysis Context, so a child forked after the Context is built computes them while the parent
computes the rest; the child's result comes back pickled through a pipe (~0.5 MB for the DDP
trace). Measured side by side in docs/benchmarks.md.

Only where it is safe and pays: Linux (fork without exec; macOS's system libraries are not
fork-safe), one Python thread alive (the reader's gzip thread has been joined by then; a
process with more, such as a Ray worker, computes in place), more than one CPU allowed to
this process, and TRAINPROF_SERIAL unset. Anything else, or a child that fails in any way,
means the function runs in this process: the result never depends on the fork.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import warnings
from typing import Any, Callable


def fork_usable() -> bool:
    if sys.platform != "linux" or os.environ.get("TRAINPROF_SERIAL"):
        return False
    if threading.active_count() != 1:
        return False
    try:
        return len(os.sched_getaffinity(0)) > 1
    except (AttributeError, OSError):
        return False


class Beside:
    """`with Beside(fn, *args) as job: ...; value = job.result()`. Leaving the block without
    asking for the result (an exception in the caller) stops the child."""

    def __init__(self, fn: Callable[..., Any], *args: Any, fork: bool | None = None) -> None:
        self.fn, self.args = fn, args
        self.pid = self.fd = None
        self.forked = False
        if fork if fork is not None else fork_usable():
            self._start()

    def _start(self) -> None:
        try:
            r, w = os.pipe()
        except OSError:
            return
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns when the process has other OS threads (numpy's BLAS pool
                # has some); OpenBLAS registers pthread_atfork handlers, and the child runs
                # only numpy code, pickles and exits.
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError:
            os.close(r)
            os.close(w)
            return
        if pid == 0:
            code = 1
            try:
                os.close(r)
                signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the child quietly
                data = pickle.dumps(self.fn(*self.args), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(w, "wb") as f:
                    f.write(data)
                code = 0
            except BaseException:  # noqa: BLE001 - any failure: the parent computes it itself
                pass
            finally:
                os._exit(code)  # no atexit handlers, no flushing of the parent's buffers
        os.close(w)
        self.pid, self.fd, self.forked = pid, r, True

    def result(self) -> Any:
        if not self.forked:
            return self.fn(*self.args)
        data = b""
        try:
            with os.fdopen(self.fd, "rb") as f:
                self.fd = None
                data = f.read()
        finally:
            status = self._reap()
        if status == 0 and data:
            try:
                return pickle.loads(data)
            except Exception:  # noqa: BLE001 - a truncated pickle: compute here
                pass
        return self.fn(*self.args)

    def _reap(self, kill: bool = False) -> int | None:
        if self.pid is None:
            return None
        if kill:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        return os.waitstatus_to_exitcode(status)

    def __enter__(self) -> "Beside":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self._reap(kill=True)
