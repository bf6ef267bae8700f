"""Relaunch a trainprof command on N ranks of this machine under torchrun.

Never a home-made launcher or transport: `trainprof run --nproc N` and `trainprof bench
allreduce --nproc N` both become

    python -m torch.distributed.run --standalone --nproc-per-node N --monitor-interval 0.1 \\
        -m trainprof COMMAND ...

and each rank initialises its process group from torchrun's environment, so the very same
command also runs under the user's own torchrun on several nodes (docs/distributed.md).

torchrun's agent polls its ranks every `--monitor-interval` seconds (0.1 s: torch 2.13's
default, passed explicitly because older releases waited 5 s) and, when one exits non-zero,
stops the others (SIGTERM) and prints a summary naming the ranks ("rank : N"; the one that
failed first under "Root Cause"): a rank that dies ends the job in about a second. We pass
its stderr (and stdout, when ours is captured) through as it comes and turn that summary
into one line. With a timeout, the job is stopped after it: SIGTERM to torchrun, whose agent
passes it to every rank (each rank runs in a session of its own, so a signal to torchrun's
process group would miss them), then SIGKILL to whatever is left of the tree after
`STOP_GRACE_S`. torchrun's shutdown output names pids only, so the ranks still running are
read from those processes' environment (RANK).
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
from typing import IO

from trainprof.errors import TrainprofError, UsageError

MONITOR_INTERVAL_S = 0.1
STOP_GRACE_S = 5.0
STDERR_TTY_ENV = "TRAINPROF_STDERR_TTY"
"""Set to 1 for the ranks when our stderr is a terminal: theirs is our pipe, and rank 0's
progress bar may still draw (the pass-through forwards partial lines at once)."""


class RankFailed(TrainprofError):
    """A rank of the job failed, or the job ran past its timeout (exit code 1)."""

    def __init__(self, message: str, ranks: list[int] | None = None) -> None:
        super().__init__(message)
        self.ranks = ranks or []  # the failed (root cause first) or still-running ranks
        self.rank = self.ranks[0] if self.ranks else None


# --- flags and ports ---------------------------------------------------------------------


def strip_flag(argv: list[str], flag: str) -> list[str]:
    """argv without `flag VALUE` and `flag=VALUE`."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == flag:
            skip = True
            continue
        if a.startswith(flag + "="):
            continue
        out.append(a)
    return out


def free_port(addr: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return int(s.getsockname()[1])


def check_port(addr: str, port: int) -> None:
    """Fail early, in one line, if `addr:port` cannot be bound by the rendezvous store
    (port 0: only that `addr` is an address of this machine)."""
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


# --- the relaunch ------------------------------------------------------------------------


def command(argv: list[str], nproc: int, *, module: str | None = "trainprof",
            master_addr: str | None = None, master_port: int | None = None) -> list[str]:
    """The torchrun command line: `--standalone` (a free local port), or a c10d rendezvous
    on `master_addr:master_port` hosted by this machine. `module=None`: argv[0] is a script."""
    if master_addr is None and master_port is None:
        rdzv = ["--standalone"]
    else:
        rdzv = ["--rdzv-backend=c10d", f"--rdzv-endpoint={master_addr or '127.0.0.1'}:{master_port}",
                "--nnodes=1"]
    return [sys.executable, "-m", "torch.distributed.run", *rdzv, f"--nproc-per-node={nproc}",
            f"--monitor-interval={MONITOR_INTERVAL_S:g}", *(["-m", module] if module else []), *argv]


def relaunch(subcommand_argv: list[str], nproc: int, *, master_addr: str | None = None,
             master_port: int | None = None, timeout_s: float | None = None, what: str = "run",
             module: str | None = "trainprof") -> int:
    """Run `python -m trainprof SUBCOMMAND_ARGV` on `nproc` local ranks under torchrun; 0
    when every rank exited 0, else RankFailed naming the rank(s). `what` names the job in
    errors ("distributed run on 2 ranks failed: ...")."""
    if master_addr is not None or master_port is not None:
        addr = master_addr or "127.0.0.1"
        check_port(addr, master_port or 0)  # a busy port would leave torchrun waiting, silently
        master_addr, master_port = addr, master_port or free_port(addr)
    cmd = command(list(subcommand_argv), nproc, module=module, master_addr=master_addr,
                  master_port=master_port)
    env = dict(os.environ)
    if _isatty(sys.stderr):
        env[STDERR_TTY_ENV] = "1"
    # Our stdout, if it is still the process's own, is the ranks' too (rank 0's tables keep
    # the terminal's colours and width); if it was replaced (captured), relay it.
    relay_out = sys.stdout is not sys.__stdout__
    for f in (sys.stdout, sys.stderr):
        f.flush()  # what we printed comes before what the ranks print
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE if relay_out else None, stderr=subprocess.PIPE,
                            env=env)
    summary = _Summary()
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    rc: int | None = None
    try:
        if _relay(proc, summary, deadline, relay_out):
            try:  # the pipes are closed: torchrun is exiting
                rc = proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        still = _stop(proc) if rc is None else []
    except BaseException:  # Ctrl-C or an error here: never leave ranks behind
        _stop(proc)
        raise
    finally:
        for f in (proc.stdout, proc.stderr):
            if f is not None:
                f.close()
    if rc is None:
        raise _timed_out(what, nproc, timeout_s or 0.0, still)
    if rc != 0:
        raise summary.error(what, nproc, rc)
    return 0


def _isatty(f: IO[str]) -> bool:
    try:
        return f.isatty()
    except (AttributeError, ValueError):
        return False


def _relay(proc: subprocess.Popen, summary: "_Summary", deadline: float | None, relay_out: bool) -> bool:
    """Copy torchrun's output to ours as it comes (partial lines too: a progress bar
    redraws with \\r) and feed stderr's lines to `summary`. False: the deadline passed."""
    streams = {proc.stderr.fileno(): (sys.stderr, summary)}  # type: ignore[union-attr]
    if relay_out:
        streams[proc.stdout.fileno()] = (sys.stdout, None)  # type: ignore[union-attr]
    decoders = {fd: codecs.getincrementaldecoder("utf-8")("replace") for fd in streams}
    with selectors.DefaultSelector() as sel:
        for fd in streams:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            # wake up now and then: torchrun may be gone while an orphan still holds the pipe
            ready = sel.select(0.5 if left is None else min(0.5, left))
            for key, _ in ready:
                fd = key.fd
                chunk = os.read(fd, 65536)
                out, sink = streams[fd]
                text = decoders[fd].decode(chunk, final=not chunk)
                if text:
                    out.write(text)
                    out.flush()
                    if sink is not None:
                        sink.feed(text)
                if not chunk:
                    sel.unregister(fd)
            if not ready and proc.poll() is not None:
                break
    return True


def _stop(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> list[int]:
    """Stop torchrun and its ranks; return the ranks that were still running."""
    import psutil

    if proc.poll() is not None:  # reaped: its pid may be another process's by now
        return []
    try:
        agent = psutil.Process(proc.pid)
        workers = agent.children()
        tree = agent.children(recursive=True)
    except psutil.Error:
        workers, tree = [], []
    still: set[int] = set()
    for w in workers:
        try:
            r = w.environ().get("RANK")
        except psutil.Error:
            continue
        if r is not None and r.isdigit():
            still.add(int(r))
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # the agent stops its ranks with SIGTERM and exits
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    _, alive = psutil.wait_procs(tree, timeout=1.0)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=grace_s)
    return sorted(still)


def _timed_out(what: str, nproc: int, timeout_s: float, still: list[int]) -> RankFailed:
    job = f"distributed {what} on {nproc} ranks"
    if still:
        s = "s" if len(still) > 1 else ""
        return RankFailed(f"{job}: rank{s} {', '.join(map(str, still))} still running after the "
                          f"{timeout_s:g} s timeout; stopped all {nproc} ranks", still)
    return RankFailed(f"{job}: stopped all {nproc} ranks after the {timeout_s:g} s timeout")


class _Summary:
    """torchrun's failure summary, read from its stderr:

        Failures:                       Root Cause (first observed failure):
        [1]:                            [0]:
          rank      : 0 (local_rank: 0)   rank      : 1 (local_rank: 1)
          exitcode  : -15 (pid: 15935)    exitcode  : 3 (pid: 15936)
    """

    _RANK = re.compile(r"\s*rank\s*:\s*(\d+)")
    _CODE = re.compile(r"\s*exitcode\s*:\s*(-?\d+)")
    _SIGNAL = re.compile(r".*SignalException: Process \d+ got signal: (\d+)")  # torchrun itself

    def __init__(self) -> None:
        self.root: list[tuple[int, int | None]] = []  # (rank, exit code)
        self.other: list[tuple[int, int | None]] = []
        self._section = self.other
        self._pending = ""
        self.signal: int | None = None

    def feed(self, text: str) -> None:
        *lines, self._pending = (self._pending + text).split("\n")
        for line in lines:
            self._line(line)

    def _line(self, line: str) -> None:
        if line.lstrip().startswith("Root Cause"):
            self._section = self.root
        elif line.strip() == "Failures:":
            self._section = self.other
        elif m := self._RANK.match(line):
            self._section.append((int(m.group(1)), None))
        elif (m := self._CODE.match(line)) and self._section:
            self._section[-1] = (self._section[-1][0], int(m.group(1)))
        elif m := self._SIGNAL.match(line):
            self.signal = int(m.group(1))

    def error(self, what: str, nproc: int, rc: int) -> RankFailed:
        # ranks torchrun stopped itself (SIGTERM) are listed as failures too: not news
        others = [r for r, c in self.other if c != -signal.SIGTERM and r not in dict(self.root)]
        ranks = list(dict.fromkeys([r for r, _ in self.root] + others))
        tail = f" (torchrun exit code {rc}; its output is above)"
        if not ranks:
            got = _how(-self.signal).removeprefix("was killed by ") if self.signal else ""
            who = f"torchrun got {got} and stopped the ranks" if got else "a rank exited with an error"
            return RankFailed(f"distributed {what} on {nproc} ranks failed: {who}{tail}")
        first, code = self.root[0] if self.root else (ranks[0], None)
        also = [r for r in ranks if r != first]
        more = (f"; rank{'s' if len(also) > 1 else ''} {', '.join(map(str, also))} failed too" if also else "")
        return RankFailed(f"distributed {what} on {nproc} ranks failed: rank {first} {_how(code)}{more}{tail}",
                          ranks)


def _how(code: int | None) -> str:
    if code is None:
        return "exited with an error"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"
