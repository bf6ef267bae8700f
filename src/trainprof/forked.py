"""One call run in a forked child while the caller goes on: `Forked(fn, *args).result()`.

Background (background.py) runs a call on a second thread, which overlaps only where numpy
releases the GIL; the dependency graph and its walks (critical path, what-ifs) are mostly
Python, so on a thread they took turns with the caller's analyses. A child forked after the
trace is read has the trace already (copy-on-write: nothing is read or sent to it) and the
second core to itself; only its result comes back through a pipe, as msgpack decoded into
the type the caller names (`returns`: msgspec keeps a float's 64 bits and an int an int, so
the record's bytes do not change; nothing is unpickled, tests/unit/test_no_unpickling.py).
Measured on the DDP trace: docs/benchmarks.md, "2026-11-29 later: the graph work forked".

`warm`: a child started early (before the trace is read) that prepares (imports, say) and
then waits for the rest of its arguments (`send`): the report writer of `analyze --out`.
Callers fork only beside a free core (spare_core): a fork costs CPU that only a second core
repays.

The child dies with the caller (parentdeath.py: a SIGTERM or `kill -9` leaves no orphan),
leaves by os._exit (no atexit handler; the caller flushes its buffered output before the
fork, so each line is written once, by the process that printed it), and takes the default
action on SIGINT (a Ctrl-C reaches both: the caller raises
KeyboardInterrupt and reaps it). An exception the call raises comes back as its class name
and arguments and is raised again by `result()` in the caller, as Background does: one of
errors.py's (the CLI's one-line errors and exit codes) or a builtin one; any other becomes a
RuntimeError naming it, with the child's traceback as a note. A child that died without an
answer (killed, out of memory) is named in a RuntimeError.

Where a fork is unsafe the call runs on a thread instead (Background), or here and now with
`thread=False` (for pure-Python work, which a thread would only slow): not Linux (macOS's
system libraries are not fork-safe), other threads running (a lock one of them holds would
stay locked in the child), or torch imported (its thread pools, as jobs/engines.py says).
"""

from __future__ import annotations

import builtins
import os
import signal
import sys
from typing import Any, Callable

import msgspec

from trainprof.background import Background


LOADAVG = "/proc/loadavg"  # its 4th field: runnable tasks now / all tasks (proc(5))


def spare_core() -> bool:
    """Whether a core is free now for a forked child beside this process: at least two cores
    for this process (its affinity) and no more runnable tasks than leave one idle. Forking
    costs CPU (on the DDP trace ~0.17 CPU-s more than the thread's path: copy-on-write faults,
    the graph built in both processes) and pays only where a second core runs the child;
    on a busy machine the thread's path finishes sooner (docs/benchmarks.md, "2026-11-29
    later"). The count is a sample of this moment, read where a child would be forked."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux: can_fork() says no anyway
        cores = os.cpu_count() or 1
    if cores < 2:
        return False
    try:
        with open(LOADAVG, encoding="ascii") as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return True
    return running - 1 <= cores - 2  # the others runnable now (this process is one) leave a core


def can_fork() -> bool:
    """Whether this process may fork a child that runs Python (see the module docstring). Every
    Python thread counts, those `threading` does not list included (started by `_thread`, as
    pytest-xdist's execnet does: a fork beside one once ran a test's "child" in the test worker);
    C threads that fork-protect themselves do not (OpenBLAS's, which register pthread_atfork)."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and len(sys._current_frames()) == 1
            and "torch" not in sys.modules)


class Forked:
    """`fn(*args)` in a forked child (a thread where can_fork() says no); use as a context
    manager so a caller that fails before `result()` kills the child at once."""

    __slots__ = ("_pid", "_fd", "_req", "_other", "_returns", "_call", "_thread")

    def __init__(self, fn: Callable[..., Any], *args: Any, returns: Any, name: str = "trainprof-forked",
                 thread: bool = True, warm: Callable[[], object] | None = None) -> None:
        """`returns`: fn's return type, as msgspec decodes it (a Struct, `str | None`, a tuple of
        them). `warm`: the child is started now, runs `warm()` (imports, say) and then waits for
        the rest of fn's arguments, which `send` gives it (msgpack: strings, numbers, lists);
        where no fork is safe, `send` makes the call."""
        self._pid = self._fd = self._req = None
        self._returns, self._call, self._thread = returns, (fn, args), (name, thread)
        self._other: Background | Called | None = None
        if not can_fork():
            if warm is None:
                self._other = Background(fn, *args, name=name) if thread else Called(fn, args)
            return
        from trainprof.parentdeath import die_with_parent, prctl

        call = prctl()  # looked up before the fork: the child loads nothing
        parent = os.getpid()
        r, w = os.pipe()
        req = os.pipe() if warm is not None else None
        _flush()  # what this process has buffered is written once, by it, not again by the child
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child; its answer is checked in the caller
            try:
                os.close(r)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                die_with_parent(call, parent)
                if req is not None:
                    os.close(req[1])
                    fn = _later(fn, warm, req[0])
                _answer(w, fn, args)
            finally:
                _flush()  # os._exit flushes nothing: a warning the call printed would be lost
                os._exit(0)
        os.close(w)
        if req is not None:
            os.close(req[0])
            self._req = req[1]
        self._pid, self._fd = pid, r

    def send(self, *more: Any) -> None:
        """The rest of fn's arguments (a Forked made with `warm`), once."""
        fn, args = self._call
        self._call = (fn, (*args, *more))
        if self._pid is None:  # no child: the call, as `thread` says
            name, thread = self._thread
            self._other = Background(fn, *args, *more, name=name) if thread else Called(fn, (*args, *more))
            return
        fd, self._req = self._req, None
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(msgspec.msgpack.encode(list(more)))
        except BrokenPipeError:  # the child ended first (its warm-up failed): result() says why
            pass

    def result(self) -> Any:
        if self._other is not None:
            return self._other.result()
        try:
            data = _read_all(self._fd)
        finally:
            self.close()
        if not data:
            raise RuntimeError("the forked analysis died without an answer (killed, or out of memory)")
        answer = msgspec.msgpack.decode(data, type=_Answer)
        if answer.error is not None:
            raise _exception(answer.error)
        if answer.unsent:
            fn, args = self._call
            return fn(*args)
        return msgspec.msgpack.decode(answer.value, type=self._returns)

    def close(self) -> None:
        """Kill the child if it still runs, and reap it (idempotent)."""
        if self._req is not None:
            os.close(self._req)
            self._req = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._pid is not None:
            pid, self._pid = self._pid, None
            try:
                os.kill(pid, signal.SIGKILL)  # a no-op for a child that already answered and left
            except ProcessLookupError:
                pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:  # reaped already (an embedding program that ignores SIGCHLD)
                pass

    def __enter__(self) -> Forked:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Called:
    """The call made at once, here; its value or exception kept for result()."""

    __slots__ = ("_value", "_error")

    def __init__(self, fn: Callable[..., Any], args: tuple) -> None:
        self._value = self._error = None
        try:
            self._value = fn(*args)
        except Exception as e:  # noqa: BLE001 - raised by result(), where a Forked raises it
            self._error = e

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


def _flush() -> None:
    for f in (sys.stdout, sys.stderr):
        try:
            if f is not None:
                f.flush()
        except (OSError, ValueError):  # a closed or broken stream: nothing of ours to keep
            pass


class _Error(msgspec.Struct):
    cls: str
    """the class's name: one of errors.py's, or a builtin exception's"""
    args: list[Any]
    text: str
    """str() of the exception"""
    filename: Any = None
    """an OSError's"""
    trace: str = ""
    """the child's traceback (a note on a RuntimeError)"""


class _Answer(msgspec.Struct):
    value: msgspec.Raw = msgspec.Raw(b"\xc0")  # msgpack nil
    error: _Error | None = None
    unsent: bool = False
    """the value does not encode (a name holding a lone surrogate, #45): the caller computes it"""


def _later(fn: Callable[..., Any], warm: Callable[[], object], req: int) -> Callable[..., Any]:  # pragma: no cover
    """fn, its last arguments read from `req` after `warm()` (in the child)."""
    def call(*args: Any) -> Any:
        warm()
        data = _read_all(req)
        if not data:  # the caller closed without sending: it no longer wants the answer
            os._exit(0)
        return fn(*args, *msgspec.msgpack.decode(data))

    return call


def _answer(fd: int, fn: Callable[..., Any], args: tuple) -> None:  # pragma: no cover - in the child
    """Write the value or the exception, msgpack, to `fd`."""
    from trainprof.jsontext import encode_hook  # numpy scalars as analysis.json writes them

    try:
        value = fn(*args)
        try:
            answer = _Answer(value=msgspec.Raw(msgspec.msgpack.encode(value, enc_hook=encode_hook)))
        except (TypeError, ValueError, msgspec.EncodeError):  # UnicodeEncodeError is a ValueError
            answer = _Answer(unsent=True)
    except BaseException as e:  # noqa: BLE001 - sent to the caller, which raises it
        import traceback

        plain = [a if isinstance(a, (str, int, float, bytes, type(None))) else str(a) for a in e.args]
        answer = _Answer(error=_Error(type(e).__name__, plain, str(e), getattr(e, "filename", None),
                                      "".join(traceback.format_exception(e))))
    with os.fdopen(fd, "wb") as f:
        f.write(msgspec.msgpack.encode(answer))


def _exception(err: _Error) -> BaseException:
    """The child's exception rebuilt here: errors.py's class with its line (a ConfigError as
    the UsageError it is, with its text), a builtin one with its arguments; else a RuntimeError
    naming it."""
    from trainprof import errors

    cls = getattr(errors, err.cls, None)
    if isinstance(cls, type) and issubclass(cls, errors.TrainprofError):
        return (errors.UsageError if issubclass(cls, errors.ConfigError) else cls)(err.text)
    cls = getattr(builtins, err.cls, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            e = cls(*err.args) if not (issubclass(cls, OSError) and err.filename) else cls(*err.args[:2], err.filename)
            if str(e) == err.text:
                return e
        except Exception:  # noqa: BLE001, S110 - arguments this class does not take: the RuntimeError below
            pass
    e = RuntimeError(f"in a forked child: {err.cls}: {err.text}")
    if hasattr(e, "add_note"):  # Python 3.11+
        e.add_note(err.trace)
    return e


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)
