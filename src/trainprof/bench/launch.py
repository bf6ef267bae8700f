"""Start N ranks with torch.multiprocessing (spawn) and watch them until all finish.

A rank that exits non-zero (an exception, `os._exit`, a signal, the OOM killer) ends the
job at once: the other ranks are stopped (SIGTERM, then SIGKILL after `grace_s`) and the
error names the rank. A job past its deadline is stopped the same way. torch's
`ProcessContext.join` does most of this, but it reports whichever failed rank it polls
first, and when one rank dies its peers fail a moment later with "connection closed";
naming the rank that died without a Python exception is the more useful answer.
"""

from __future__ import annotations

import errno
import multiprocessing.connection
import os
import pickle
import signal
import socket
import time
from typing import Any, Callable

from trainprof.errors import TrainprofError, UsageError

_POLL_S = 0.2


class RankFailed(TrainprofError):
    """A rank died or the job ran past its deadline (exit code 1)."""

    def __init__(self, message: str, rank: int | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.rank = rank
        self.detail = detail  # the rank's traceback, if it raised


def free_port(addr: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return int(s.getsockname()[1])


def check_port(addr: str, port: int) -> None:
    """Fail early, in one line, if `addr:port` cannot be bound by rank 0's TCP store."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # SO_REUSEADDR as the store sets it: a port in TIME_WAIT is free, a listening one is not.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((addr, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise UsageError(port_busy_message(addr, port)) from None
            raise UsageError(f"--master-addr {addr} --master-port {port}: cannot listen there "
                             f"({e.strerror or e}); --master-addr must be an address of this machine") from None


def port_busy_message(addr: str, port: int) -> str:
    return (f"--master-port {port}: {addr}:{port} is already in use (another job's rendezvous?); "
            "pick another port, or leave --master-port out to use a free one")


def run_ranks(fn: Callable[..., None], nproc: int, args: tuple[Any, ...], *, timeout_s: float,
              on_tick: Callable[[], None] | None = None, grace_s: float = 1.0) -> None:
    """Run `fn(rank, *args)` in `nproc` spawned processes; return when all exit 0."""
    import torch.multiprocessing as mp

    ctx = mp.start_processes(fn, args=args, nprocs=nproc, join=False, start_method="spawn")
    procs, error_files = ctx.processes, ctx.error_files
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            if on_tick is not None:
                on_tick()
            codes = [p.exitcode for p in procs]
            failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                _stop(procs, grace_s)
                raise _describe(failed, procs, error_files)
            if all(c == 0 for c in codes):
                return
            alive = [i for i, c in enumerate(codes) if c is None]
            if time.monotonic() > deadline:
                _stop(procs, grace_s)
                raise RankFailed(f"rank{'s' if len(alive) > 1 else ''} {', '.join(map(str, alive))} "
                                 f"still running after the {timeout_s:g} s timeout; stopped all "
                                 f"{nproc} ranks", rank=alive[0])
            multiprocessing.connection.wait([procs[i].sentinel for i in alive], timeout=_POLL_S)
    except BaseException:
        _stop(procs, grace_s)  # Ctrl-C or an error here: never leave ranks behind
        raise
    finally:
        for f in error_files:
            _unlink(f)


def _stop(procs: list[Any], grace_s: float) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    end = time.monotonic() + grace_s
    for p in procs:
        p.join(max(0.0, end - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
        p.join()


def _describe(failed: list[int], procs: list[Any], error_files: list[str]) -> RankFailed:
    """The failure to report: a rank that died without a Python exception (its peers then
    fail with connection errors) before one that raised; then the lowest rank."""
    traces = {i: _read_trace(error_files[i]) for i in failed}
    rank = min(failed, key=lambda i: (traces[i] is not None, i))
    code, n = procs[rank].exitcode, len(procs)
    others = "; stopped the other rank" if n == 2 else f"; stopped the other {n - 1} ranks"
    trace = traces[rank]
    if trace is not None:
        return RankFailed(f"rank {rank} failed: {_last_line(trace)}{others}", rank=rank, detail=trace)
    if code < 0:
        try:
            how = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
    else:
        how = f"exited with code {code}"
    return RankFailed(f"rank {rank} {how}{others}", rank=rank)


def _read_trace(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return str(pickle.load(f))
    except (OSError, EOFError, pickle.UnpicklingError):
        return None


def _last_line(trace: str) -> str:
    lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else "unknown error"
    return last.removeprefix("trainprof.errors.")


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
