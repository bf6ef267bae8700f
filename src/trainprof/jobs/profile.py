"""`trainprof profile -- COMMAND...` as a job: the user's program, measured from inside.

The program runs as our child, unchanged: its argv, stdin/stdout/stderr (inherited, never
piped), environment and exit code are its own. trainprof gets in through PYTHONPATH: the
bootstrap folder goes first (inject/bootstrap/sitecustomize.py) and the agent's options in
`inject.ENV`; every Python process of the program inherits both, so torchrun's ranks are
each measured (inject/agent.py claims one process per rank). `--nproc N` runs the command
under torchrun (jobs/torchrun.py: `python -m torch.distributed.run --standalone ...`).

While it runs we forward SIGTERM, SIGHUP, SIGUSR1/2 to it, and SIGINT/SIGQUIT unless the
terminal sent them (then it sent them to the program too: it is in our foreground process
group, and a second Ctrl-C would be one too many). We wait; when every rank on this machine
has written its part (the window is complete) the run folder is composed and appears
(jobs/profile_records.py) while the program goes on; when it exits, run.json gets its status
and exit code. A program that ends before the window completes still leaves what it measured.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from trainprof import atomic
from trainprof.errors import UsageError
from trainprof.inject import ENV, PARTS, bootstrap_dir, package_dir
from trainprof.inject.options import AgentConfig
from trainprof.jobs import profile_records as records
from trainprof.jobs.profile_config import ProfileJob
from trainprof.lowpriority import idle_cpu

POLL_S = 0.2  # how often the parts folder is looked at while the program runs
PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")
TORCHRUN_MODULES = ("torch.distributed.run", "torch.distributed.launch")
FORWARDED = ("SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2")
FROM_TERMINAL = ("SIGINT", "SIGQUIT")  # a terminal sends these to its whole foreground group


@dataclass(frozen=True)
class ProfileResult:
    returncode: int
    """the program's exit code (-N: killed by signal N)"""
    written: records.Written | None
    """what the run folder holds; None when nothing was measured"""
    message: str | None
    """why nothing (or less than the window) was measured, with the fix; or a problem writing"""


def command_line(command: list[str], nproc: int) -> list[str]:
    """The argv to start: the user's, or wrapped in torchrun for --nproc. A .py path that is
    not executable runs with this Python."""
    if not command:
        raise UsageError("profile: give the command after --, e.g. trainprof profile -- python train.py")
    cmd = list(command)
    if nproc > 1 and is_torchrun(cmd):
        raise UsageError("profile: --nproc with a torchrun command: give the ranks to torchrun (--nproc-per-node) "
                         "or to --nproc, not both")
    if cmd[0].endswith(".py") and os.path.isfile(cmd[0]) and not os.access(cmd[0], os.X_OK):
        cmd = [sys.executable, *cmd]
    if shutil.which(cmd[0]) is None:
        raise UsageError(f"profile: {cmd[0]}: command not found (or not executable)")
    if nproc <= 1:
        return cmd
    from trainprof.jobs.torchrun import command as torchrun_command

    rest = cmd[1:] if PYTHON.match(os.path.basename(cmd[0])) else cmd
    if rest[:1] == ["-m"] and len(rest) > 1:
        return torchrun_command(rest[2:], nproc, module=rest[1])
    if not rest or rest[0].startswith("-"):
        raise UsageError("profile: --nproc runs `python SCRIPT ARGS`, `python -m MODULE ARGS` or `SCRIPT.py ARGS` "
                         f"under torchrun; cannot place {' '.join(command[:3])} ...")
    return torchrun_command(rest, nproc, module=None)


def is_torchrun(cmd: list[str]) -> bool:
    exe = os.path.basename(cmd[0])
    if exe == "torchrun":
        return True
    return bool(PYTHON.match(exe)) and len(cmd) > 2 and cmd[1] == "-m" and cmd[2] in TORCHRUN_MODULES


def child_env(job: ProfileJob, parts: Path) -> dict[str, str]:
    env = dict(os.environ)
    own = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join([str(bootstrap_dir()), *([own] if own else [])])
    env[ENV] = AgentConfig(job.profile, str(parts.resolve()), str(package_dir()), peaks=dataclasses.asdict(job.peaks),
                           pythonpath=own, parent_pid=os.getpid(), knobs=job.agent_knobs()).to_env()
    return env


def execute(job: ProfileJob, out: Path, *, on_window: Callable[[records.Written], None] | None = None,
            write_report: Callable[[Path, Path], str | None] | None = None) -> ProfileResult:
    """Run the program; write the run folder `out` (checked: outdir.check_out) when its window
    is recorded (`on_window` is told, the program still running) or when it ends; return once
    it has ended."""
    argv = command_line(job.argv, job.ranks.nproc)
    proc: subprocess.Popen | None = None
    restore: Callable[[], None] = lambda: None  # noqa: E731
    written: records.Written | None = None
    message: str | None = None
    try:
        try:
            with atomic.staged_dir(out, force=job.output.force) as stage:
                parts = stage / PARTS
                parts.mkdir()
                for f in (sys.stdout, sys.stderr):
                    f.flush()  # what we printed comes before what the program prints
                proc = subprocess.Popen(argv, env=child_env(job, parts))
                restore = forward_signals(proc)
                rc = wait_window(proc, parts)
                if rc is None and job.analysis == "after":
                    rc = proc.wait()
                found = records.read_parts(parts)
                if not found.measured:
                    raise _Nothing(found)
                with idle_cpu() if rc is None else contextlib.nullcontext():  # the program runs on: ours waits
                    written = records.compose(stage, out, found, job.argv, rc, job.profile,
                                              write_report=write_report)
                shutil.rmtree(parts, ignore_errors=True)
        except _Nothing as n:
            rc = proc.wait() if proc is not None else 0
            return ProfileResult(rc, None, records.explain(n.found, job.profile, rc))
        except Exception as e:  # noqa: BLE001 - our failure must not cost the program: it runs on
            if proc is None:
                raise
            from trainprof.controls import one_line

            message = f"cannot write the run folder ({type(e).__name__}: {one_line(str(e))}); the program runs on"
            return ProfileResult(proc.wait(), None, message)
        if rc is None:  # composed while the program runs on: its status comes when it ends
            if on_window is not None and proc.poll() is None:
                on_window(written)
            rc = proc.wait()
            try:
                written = records.finalize(written, rc, job.profile, write_report=write_report)
            except Exception as e:  # noqa: BLE001 - the folder is there; only its status line is missing
                from trainprof.controls import one_line

                return ProfileResult(rc, written, f"cannot record the program's end in {out / 'run.json'} "
                                     f"({type(e).__name__}: {one_line(str(e))})")
        message = records.partial_note(written, job.profile)
        return ProfileResult(rc, written, message)
    finally:
        restore()


class _Nothing(Exception):
    def __init__(self, found: records.Parts) -> None:
        self.found = found


def wait_window(proc: subprocess.Popen, parts: Path) -> int | None:
    """Until every rank of this machine has written its part (None: the program runs on) or
    the program has exited (its exit code)."""
    while True:
        try:
            return proc.wait(POLL_S)
        except subprocess.TimeoutExpired:
            pass
        if records.window_complete(parts):
            return proc.poll()


def forward_signals(proc: subprocess.Popen) -> Callable[[], None]:
    """Pass the signals we get on to the program; returns the function that stops it."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: object) -> None:  # noqa: ARG001
        if signal.Signals(signum).name in FROM_TERMINAL and _terminal_foreground():
            return  # the terminal signalled the program itself: it is in our foreground process group
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    names = [n for n in FORWARDED + FROM_TERMINAL if hasattr(signal, n)]
    old = {getattr(signal, n): signal.signal(getattr(signal, n), handler) for n in names}

    def restore() -> None:
        for s, h in old.items():
            signal.signal(s, h)

    return restore


def _terminal_foreground() -> bool:
    """Whether we are the foreground process group of our controlling terminal (so a Ctrl-C
    typed there reached the program as well)."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def exit_code(returncode: int) -> int:
    """The code `trainprof profile` exits with: the program's, or 128 + N when signal N ended it
    (what a shell reports for the program itself)."""
    return 128 - returncode if returncode < 0 else returncode
