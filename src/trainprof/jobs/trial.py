"""One trial in a fresh process: its own process group, dying with us, a timeout, a clear outcome.

The tune ladder (jobs/tune.py) and the memory study (jobs/memory_probe.py) both measure each
configuration in a fresh process: its peak memory is its own (a process's peak RSS cannot be
lowered again), compile caches and allocator state do not leak into the next configuration,
and an OOM or a crash ends one child, not the tool. They start it two ways:

* `run_command`: an exec'd command line (`trainprof run ...`): the command is the trial's
  exact reproduction. It gets a folder `.trainprof-trial.<pid>.*.partial` inside `workdir`,
  removed when the trial ends and, after a `kill -9` of this process, by the next start
  (atomic.clean_stale).
* `run_function`: a function in a multiprocessing child, e.g. forked from a forkserver that
  has already imported torch (~0.1 s a start instead of ~2-3 s); it sends its record back
  through a pipe, and may send it early (an emulated OOM ends the child at once).

Either way the trial runs in its own process group (its DataLoader and compile workers with
it), killed as one with SIGKILL on a timeout or Ctrl-C (the terminal's SIGINT reaches only
the foreground group, not the trial's), and it dies with this process: Linux
`prctl(PR_SET_PDEATHSIG, SIGKILL)`, set in the child before exec (a command) or first thing
(a function), and for a forkserver child, whose parent is the forkserver, a thread watching
this process's multiprocessing sentinel. Without them a `kill -9` of tune left the trial
running ~30 s with PPID 1 (issue #19), and one of `trainprof memory` left its probe running.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Mapping, Sequence

from trainprof.parentdeath import die_with_parent, prctl

TEMP_NAME = "trainprof-trial"  # .trainprof-trial.<pid>.<random>.partial: atomic.clean_stale removes it
JOIN_S = 30.0  # a child that answered but does not exit within this is killed


@dataclass(frozen=True)
class Outcome:
    """How a trial process ended."""

    status: Literal["ok", "failed", "timeout"]
    """ok: it exited 0 (a command) or sent a record (a function)"""
    record: Any = None
    """what it produced: `read(folder)` of a command, the message a function sent"""
    reason: str = ""
    """why not ok, one line: the last line of its stderr, its exit code, or the timeout"""
    returncode: int | None = None
    """the exit status (< 0: killed by that signal); None while it was still running"""
    wall_s: float = 0.0
    stdout: str = ""
    """a command's output (for its log); empty for a function"""
    stderr: str = ""


# ---- dying with the parent: trainprof/parentdeath.py ------------------------------------
def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # the trial and its DataLoader / compile workers
    except (ProcessLookupError, PermissionError):
        pass


# ---- a command line ----------------------------------------------------------------------
def run_command(argv: Callable[[Path], Sequence[str]], read: Callable[[Path], Any], *, timeout_s: float | None,
                workdir: str | os.PathLike | None = None, env: Mapping[str, str] | None = None) -> Outcome:
    """Run `argv(folder)`, `folder` being the trial's own (inside `workdir`; default the system
    temp folder); when it exits 0, `read(folder)` is the record (it may move what it keeps out
    of the folder). The folder is removed before this returns. `timeout_s` None: no limit;
    `env` None: this process's environment."""
    from trainprof import atomic

    where = Path(workdir) if workdir is not None else Path(tempfile.gettempdir())
    atomic.clean_stale(where, TEMP_NAME)
    folder = Path(tempfile.mkdtemp(prefix=f".{TEMP_NAME}.{os.getpid()}.", suffix=".partial", dir=where))
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(list(argv(folder)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(env) if env is not None else None,
                             start_new_session=True,  # its own process group: killed as one
                             preexec_fn=functools.partial(die_with_parent, prctl(), os.getpid()))  # noqa: PLW1509
        try:
            stdout, stderr = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(p.pid)
            stdout, stderr = p.communicate()  # reap it and close the pipes
            return Outcome("timeout", reason=f"timed out after {timeout_s:.0f} s", wall_s=time.monotonic() - t0,
                           stdout=stdout, stderr=stderr)
        except BaseException:  # Ctrl-C: the trial is in its own session, the terminal's SIGINT missed it
            _kill_group(p.pid)
            p.wait()
            raise
        wall = time.monotonic() - t0
        if p.returncode != 0:
            return Outcome("failed", reason=_last_line(stderr, p.returncode), returncode=p.returncode, wall_s=wall,
                           stdout=stdout, stderr=stderr)
        return Outcome("ok", record=read(folder), returncode=0, wall_s=wall, stdout=stdout, stderr=stderr)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _last_line(stderr: str, code: int) -> str:
    lines = stderr.strip().splitlines()
    if lines:
        return lines[-1][:300]
    return f"exited with code {code}, no message" if code > 0 else f"killed by signal {-code}, no message"


# ---- a function --------------------------------------------------------------------------
def run_function(target: Callable[..., None], args: tuple, *, timeout_s: float, context: Any = None) -> Outcome:
    """Run `target(conn, *args)` in a child of the multiprocessing `context` (default: the
    platform's); the first message it sends through `conn` is the record. `target` and `args`
    must pickle for a forkserver or spawn context."""
    import multiprocessing as mp

    ctx = context or mp.get_context()
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(target, send, args), daemon=True)
    t0 = time.monotonic()
    with _main_hidden():
        proc.start()
    send.close()  # the child holds the only writer: EOF when it dies
    msg, got = None, False
    try:
        if recv.poll(timeout_s):  # a record, or EOF: the child is done either way
            try:
                msg, got = recv.recv(), True
            except EOFError:
                pass
            proc.join(JOIN_S)
        if proc.is_alive():  # no answer in time (or stuck after answering)
            _kill_group(proc.pid)
            proc.kill()  # in case it had not reached setpgid yet
            proc.join()
            if not got:
                return Outcome("timeout", reason=f"timed out after {timeout_s:.0f} s", wall_s=time.monotonic() - t0)
    except BaseException:  # Ctrl-C: take the child down with us
        _kill_group(proc.pid)
        proc.kill()
        proc.join()
        raise
    finally:
        recv.close()
    wall = time.monotonic() - t0
    if got:
        return Outcome("ok", record=msg, returncode=proc.exitcode, wall_s=wall)
    code = proc.exitcode
    why = f"exited with code {code} and no record" if code is None or code >= 0 else \
        f"killed by signal {-code} ({signal.Signals(-code).name}) before sending a record"
    return Outcome("failed", reason=why, returncode=code, wall_s=wall)


@contextmanager
def _main_hidden() -> Iterator[None]:
    """Start a child without re-running the caller's main module in it. multiprocessing
    re-imports `__main__` in forkserver/spawn children so that targets defined there
    resolve; ours live in importable modules, and re-running a caller's unguarded script (or
    a stdin / notebook main, which cannot be re-run) would break the trial."""
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if main is not None and k in main.__dict__}
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__dict__["__spec__"] = None  # spawn.get_preparation_data reads it unguarded
        yield
    finally:
        if main is not None:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)


def _child(target: Callable[..., None], conn: Any, args: tuple) -> None:  # pragma: no cover - in the child
    os.setpgid(0, 0)  # its own process group: its workers die with it
    die_with_parent(prctl(), os.getppid())
    _watch_launcher()
    target(conn, *args)


def _watch_launcher() -> None:  # pragma: no cover - in the child
    """A forkserver child's parent is the forkserver, and PR_SET_PDEATHSIG watches the parent;
    the forkserver outlives the process that asked for the child (every child it forked holds
    its "alive" pipe open), so a `kill -9` of tune or memory would leave the trial running. The
    launching process's sentinel (`multiprocessing.parent_process()`: a pipe that closes when
    it dies) is watched instead, and its end kills the trial's process group."""
    import multiprocessing as mp
    import threading
    from multiprocessing.connection import wait

    launcher = mp.parent_process()
    if launcher is None or launcher.sentinel is None:
        return

    def watch() -> None:
        wait([launcher.sentinel])
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="trainprof-trial-launcher-watch", daemon=True).start()
