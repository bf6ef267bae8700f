"""Run the per-rank analysis of a job on an engine: a local process pool or Ray tasks.

Both map a function over the job's rank traces and return the results in input order; the
function never raises for a bad trace (it returns the error as data, see
jobs/analyze.py: analyze_source), so one unreadable rank among 1,000 costs that rank, not the job.
Only the small per-rank summary (~15 KB of JSON) travels back; the trace is read and
dropped inside the worker. The job-level reduce (stragglers, skew, findings) runs on the
driver over those summaries (jobs/analyze.py: reduce_job): pure functions, the same for both engines.

local: a process pool of --jobs workers (default: the machine's cores). Each worker holds one
trace at a time, so at most --jobs traces are in memory (~2x a trace's JSON size each:
docs/scale.md).
ray:   one Ray task per rank trace (1 CPU each), reading its trace from storage itself (a
local path every node sees, or an fsspec URL such as s3://...), so the driver never touches
trace bytes. Without --ray-address a local Ray instance with --jobs CPUs is started for the
command and stopped after it; with one, the command joins that cluster, whose workers need
trainprof (and s3fs/gcsfs for those URLs) installed.

Engine failures are one line with the cause and the way out, exit 2, and nothing written
(the output folder is staged after the map; issue #33: on a busy 2-core machine Ray's local
start-up took 38 s and `analyze DIR --engine ray` died of "The current node timed out during
startup", a bare `Exception` with a traceback):
  - start-up: Ray waits a fixed ~30 s for its raylet; within --ray-start-timeout (default
    START_TIMEOUT_S) a timed-out start is shut down and tried again, then refused, naming
    --ray-start-timeout and --engine local;
  - --ray-address: checked for its form, reached over TCP and asked for a gRPC (HTTP/2)
    handshake, each within CONNECT_CHECK_S, before ray.init, which on an unreachable address
    printed C++ warnings for minutes and on an open port that is not Ray (a silent socket, an
    HTTP server) retried for minutes inside C++ that held off SIGTERM (issue #45);
  - a worker or node lost during the map (ray.exceptions.RayError from ray.get): refused,
    naming --engine local;
  - SIGTERM (issue #45: exit 1 and a C++ stack dump, 12 s late): the command's own handler is
    kept through Ray's start-up, the driver waits on its tasks in WAIT_S slices so the handler
    runs, and `finally` shuts Ray down: exit 143, one line, ~2 s with a local instance.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from trainprof.errors import ConfigError, UsageError
from trainprof.flags import option

ENGINES = ("local", "ray")
START_TIMEOUT_S = 120.0  # Ray's own raylet wait is 30 s; a loaded 2-core machine took 38 s (issue #33)
WAIT_S = 0.25  # the longest the driver waits on Ray tasks before Python's signal handlers run
CONNECT_CHECK_S = 10.0  # a TCP connect to --ray-address, then its gRPC handshake; a reachable head answers in ms


@dataclass(frozen=True)
class EngineConfig:
    """How to run a job's per-rank analyses (`trainprof analyze`'s engine section: --engine,
    --jobs, --ray-address, --ray-start-timeout)."""

    PATH: ClassVar[str] = "engine"

    engine: Literal["local", "ray"] = "local"
    """local: a process pool on this machine; ray: one Ray task per trace (pip install 'trainprof[cluster]'),
    see docs/scale.md"""
    jobs: int | None = None
    """parallel workers for several traces, at most this many traces in memory at once (default: cores); with
    --engine ray and no address: the local Ray CPUs"""
    ray_address: str | None = option(None, metavar="ADDR")
    """join this Ray cluster (e.g. auto, HOST:6379, ray://HOST:10001) instead of starting a local one; --engine
    ray only"""
    ray_start_timeout_s: float = option(START_TIMEOUT_S, flag="--ray-start-timeout", metavar="SECONDS")
    """how long a local Ray instance may take to start, retried within it (a busy machine can need more);
    --engine ray only"""

    def __post_init__(self) -> None:
        import math

        if self.engine not in ENGINES:
            raise ConfigError("engine", f"must be one of {', '.join(ENGINES)}", owner=self.PATH, got=self.engine)
        if self.jobs is not None and self.jobs < 1:
            raise ConfigError("jobs", "must be ≥ 1", owner=self.PATH, got=self.jobs)
        if self.engine != "ray":  # given without the engine that reads it: a mistake, said so
            for name, default in (("ray_address", None), ("ray_start_timeout_s", START_TIMEOUT_S)):
                if getattr(self, name) != default:
                    raise ConfigError(name, "needs {0} ray", "engine", owner=self.PATH)
        if not (math.isfinite(self.ray_start_timeout_s) and 0 <= self.ray_start_timeout_s <= 3600):
            raise ConfigError("ray_start_timeout_s", "must be from 0 to 3600 seconds", owner=self.PATH,
                              got=self.ray_start_timeout_s)


def run_map(fn: Callable[..., Any], args: Sequence[tuple], cfg: EngineConfig) -> list[Any]:
    """[fn(*a) for a in args], on the configured engine, in input order."""
    if not args:
        return []
    if cfg.engine == "ray":
        return _ray(fn, args, cfg)
    return _local(fn, args, cfg)


def _local(fn: Callable[..., Any], args: Sequence[tuple], cfg: EngineConfig) -> list[Any]:
    jobs = min(len(args), cfg.jobs or os.cpu_count() or 1)
    if jobs == 1:
        return [fn(*a) for a in args]
    import multiprocessing
    import sys
    from concurrent.futures import ProcessPoolExecutor

    # fork is cheapest, but a process that has already run torch holds OpenMP/intra-op
    # thread pools that a forked child inherits locked: its first matmul (the CPU roof of a
    # CPU trace, backends/cpu.py) then waits forever. `trainprof analyze` imports no torch
    # (tests/integration/test_analyze_imports.py); an embedding program (a notebook, a test
    # runner) may have, and then its workers start as fresh interpreters (spawn). Not the
    # forkserver: a process has one, and the first to start it fixes its preload; started here
    # bare, it left `trainprof memory`'s probes (jobs/memory_probe.py, whose server preloads
    # torch and the trainer) importing torch in every child: 2.7-3.5 CPU-s a probe instead of
    # 0.5-1.1 s, the test suite's memory search 56 s instead of 19 s.
    method = "spawn" if "torch" in sys.modules else "fork"
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(method)) as pool:
        return list(pool.map(fn, *zip(*args)))


def _ray(fn: Callable[..., Any], args: Sequence[tuple], cfg: EngineConfig) -> list[Any]:
    try:
        import ray
    except ImportError:
        raise UsageError("--engine ray needs Ray: pip install 'trainprof[cluster]'") from None

    started = not ray.is_initialized()
    try:
        if started:
            with _sigterm_stays_ours(ray):
                _start(ray, cfg)
        # max_retries=0: the task returns errors as data; a retry would only re-read a bad trace.
        task = ray.remote(num_cpus=1, max_retries=0)(fn)
        try:
            refs = [task.remote(*a) for a in args]
            pending = refs
            while pending:  # short waits: a blocked ray.get ran a SIGTERM's handler 12 s late (#45)
                _, pending = ray.wait(pending, num_returns=len(pending), timeout=WAIT_S)
            return ray.get(refs)
        except ray.exceptions.RayError as e:  # a worker or a node died (OOM killer, preemption)
            raise UsageError(f"--engine ray: the analysis lost a Ray worker or node ({type(e).__name__}: "
                             f"{_first_line(e)}); nothing was written: run it again, or use --engine local") from None
        except SystemError as e:
            # Ray's wait runs Python's signal handlers and turns any exception but KeyboardInterrupt into
            # "SystemError: ... returned a result with an exception set", the handler's exception as its
            # cause: SIGTERM's cli.Terminated came out as that traceback, exit 1 (#45). Raised as itself.
            cause = e.__cause__ or e.__context__
            if isinstance(cause, BaseException) and not isinstance(cause, Exception):
                raise cause from None
            raise
    finally:
        if started:
            ray.shutdown()


@contextmanager
def _sigterm_stays_ours(ray: Any) -> Iterator[None]:
    """Keep the command's SIGTERM handler (cli.Terminated: `finally` blocks run, so Ray is shut
    down and nothing is half-written; exit 143) through Ray's start-up, which replaces it
    twice (ray.init: sys.exit(15); a local node: kill its processes, then sys.exit(1)) and
    whose core worker adds a C++ handler printing "*** SIGTERM received ..." with a stack
    dump: SIGTERM to `analyze --engine ray` was exit 1 and that dump (#45). Ray's Python
    handlers are not installed while it starts (both go through
    ray._private.utils.set_sigterm_handler), and ours is installed again over the C++ one
    after. An embedding program without a handler of its own keeps Ray's."""
    import signal
    import threading

    ours = signal.getsignal(signal.SIGTERM)
    if not callable(ours) or threading.current_thread() is not threading.main_thread():
        yield
        return
    utils = getattr(getattr(ray, "_private", None), "utils", None)
    setter = getattr(utils, "set_sigterm_handler", None)
    if setter is not None:
        utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        if setter is not None:
            utils.set_sigterm_handler = setter
        signal.signal(signal.SIGTERM, ours)


def _start(ray: Any, cfg: EngineConfig) -> None:
    """ray.init for this command: join --ray-address (checked first), or start a private
    local instance, retrying a timed-out start within cfg.ray_start_timeout_s."""
    import logging

    if cfg.ray_address:
        check_address(cfg.ray_address)
    # Ray sets OMP_NUM_THREADS=1 in its workers; the CPU roofs measured for a CPU-only trace
    # (backends/cpu.py, cached per thread count) must be those the local engine uses.
    threads = os.environ.get("OMP_NUM_THREADS") or str(os.cpu_count() or 1)
    common = {"logging_level": logging.ERROR, "log_to_driver": False, "configure_logging": True,
              "runtime_env": {"env_vars": {"OMP_NUM_THREADS": threads}}}
    where = f"the Ray cluster at {cfg.ray_address}" if cfg.ray_address else "a local Ray instance"
    deadline = time.monotonic() + cfg.ray_start_timeout_s
    while True:
        try:
            if cfg.ray_address:
                ray.init(address=cfg.ray_address, **common)
            else:  # a private local instance on the loopback interface, for this command only
                ray.init(num_cpus=cfg.jobs or os.cpu_count() or 1, include_dashboard=False,
                         _node_ip_address="127.0.0.1", **common)
            return
        except Exception as e:  # noqa: BLE001 - Ray raises a bare Exception for a start-up timeout
            try:
                ray.shutdown()  # whatever half started
            except Exception:  # noqa: BLE001
                pass
            timed_out = "timed out" in str(e).lower() or isinstance(e, TimeoutError)
            if timed_out and not cfg.ray_address and time.monotonic() < deadline:
                continue  # Ray's own wait is fixed (30 s): a second start on a loaded machine usually goes
            if timed_out:
                raise UsageError(f"--engine ray: {where} did not start within --ray-start-timeout "
                                 f"{cfg.ray_start_timeout_s:g} s (Ray: {_first_line(e)}); the machine may be busy: "
                                 "pass a longer --ray-start-timeout, or use --engine local") from None
            raise UsageError(f"--engine ray: cannot start or join {where} ({type(e).__name__}: {_first_line(e)}); "
                             "use --engine local to analyse on this machine") from None


def check_address(address: str) -> None:
    """--ray-address: `auto`, `HOST:PORT` or `ray://HOST:PORT`, reachable over TCP now, and
    answering as a gRPC server does (ray.init on an unreachable address printed C++ warnings
    for minutes before it failed; on an open port that is not Ray, a silent socket or an HTTP
    server, it retried for minutes inside C++ code that does not let SIGTERM through: #45)."""
    import socket

    if address == "auto":
        return
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or "/" in hostport:
        raise UsageError(f"--ray-address {address}: expected auto, HOST:PORT or ray://HOST:PORT")
    try:
        conn = socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_CHECK_S)
    except OSError as e:
        why = {socket.gaierror: "no such host", ConnectionRefusedError: "connection refused",
               TimeoutError: f"no answer in {CONNECT_CHECK_S:g} s"}.get(type(e), e.strerror or str(e))
        raise UsageError(f"--ray-address {address}: cannot reach {host}:{port} ({why}); check the address, "
                         "or use --engine local to analyse on this machine") from None
    with conn:
        if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
            return  # a TLS head answers in TLS first (Ray's own test of the variable, ray/util/client/worker.py)
        why = _grpc_handshake(conn)
    if why:
        raise UsageError(f"--ray-address {address}: {host}:{port} is open but is not a Ray head ({why}); check "
                         "the address (a head's GCS port, 6379 by default, or ray://HOST:10001 for Ray Client), "
                         "or use --engine local to analyse on this machine")


# An HTTP/2 client's connection preface and an empty SETTINGS frame (RFC 9113 §3.4, §6.5).
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _grpc_handshake(conn: Any) -> str | None:
    """None when the peer speaks HTTP/2 as every gRPC server does (Ray's GCS and its Ray
    Client server are gRPC servers): after our preface its first frame is a SETTINGS frame
    on stream 0. Otherwise a few words on what it did instead. Bounded by the socket's
    timeout (CONNECT_CHECK_S); a reachable head answers in milliseconds."""
    import socket

    try:
        conn.sendall(H2_PREFACE)
        head = b""
        while len(head) < 9:  # a frame header: length (3), type (1), flags (1), stream (4)
            piece = conn.recv(9 - len(head))
            if not piece:
                return "it closed the connection without a gRPC handshake"
            head += piece
    except socket.timeout:
        return f"no gRPC handshake in {CONNECT_CHECK_S:g} s"
    except OSError as e:
        return f"the gRPC handshake failed: {e.strerror or type(e).__name__}"
    if head[3] == 4 and not head[4] & 1 and head[5:9] == bytes(4):
        return None
    if head.startswith(b"HTTP/"):
        return "it answered as an HTTP/1 server, not gRPC"
    return "it answered, but not with a gRPC handshake"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__
