"""Sample the host's Python stacks with py-spy (a separate process) over the profiled window.

py-spy (https://github.com/benfred/py-spy, PyPI `py-spy`) reads the interpreter's memory
from outside through ptrace/process_vm_readv. `--nonblocking`: it never pauses the program
(a sample may then mix two instants; pausing 100 times a second would cost the program's own
step time, which the profiled steps report). Native (C/C++) frames are therefore not
recorded: py-spy 0.4 refuses `--native` with `--nonblocking` ("Can't get native stack traces
with the --nonblocking option"), and the program must not be paused. The cost falls on
another core: py-spy's own process, ~1–3% of one core at 100 Hz.

Refusals are notices, never errors: py-spy not installed, or not allowed to attach (ptrace
restricted: Yama ptrace_scope, a container without CAP_SYS_PTRACE) gives one line on stderr
and a window without host stacks.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

RATE_HZ = 100  # py-spy's default: 10 ms between samples, ±√(p(1−p)/n) on a share
STOP_S = 10.0  # py-spy writes its file on SIGINT; a larger window takes longer to write
READY_S = 5.0  # attaching takes ~0.1 s; a SIGINT before py-spy is ready kills it with nothing written


class PySpy:
    """`start()` at the window's first recorded step, `stop()` after its last."""

    def __init__(self, out: Path, pid: int | None = None) -> None:
        self.out, self.pid = Path(out), pid or os.getpid()
        self.proc: subprocess.Popen | None = None
        self.notice: str | None = None
        self._first = b""

    def start(self) -> bool:
        exe = shutil.which("py-spy")
        if exe is None:
            self.notice = "--py-spy: py-spy is not installed (pip install py-spy); no host stacks recorded"
            return False
        argv = [exe, "record", "--pid", str(self.pid), "--rate", str(RATE_HZ), "--format", "raw",
                "--output", str(self.out), "--nonblocking"]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self._first = _first_line(self.proc, READY_S)  # "py-spy> Sampling process ..." once attached
        return True

    def stop(self) -> Path | None:
        """The samples' file, or None (the reason in `notice`)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # py-spy's Ctrl-C: stop sampling, write the file
        try:
            _, err = proc.communicate(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        if self.out.is_file() and self.out.stat().st_size > 0:
            return self.out
        last = [ln for ln in (self._first + (err or b"")).decode("utf-8", "replace").splitlines() if ln.strip()]
        why = last[-1].strip() if last else f"exit code {proc.returncode}"
        self.notice = f"--py-spy: py-spy could not sample this process ({why[:200]}); no host stacks recorded"
        return None


def _first_line(proc: subprocess.Popen, timeout_s: float) -> bytes:
    """py-spy's first stderr line (it prints it once attached, or its error), waiting at most
    `timeout_s`: the window's steps start only once the samples can be taken."""
    import select

    ready, _, _ = select.select([proc.stderr], [], [], timeout_s)
    return proc.stderr.readline() if ready else b""
