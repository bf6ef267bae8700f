"""Progress of a long command (run, tune, study) when stderr is not a terminal: plain lines.

rich draws its live display (a bar, a spinner) only on a terminal and prints nothing
otherwise, so a batch job's log (`trainprof study > log 2>&1`) showed nothing of a 17-minute
run until it ended (issue #32). Off a terminal, `Lines` prints one line when a stage starts
or ends and a heartbeat line every HEARTBEAT_S with what is running and how far it got:

    09:42:21 trainprof study: [1/5] baseline started (expected ~90 s; 0 s of the 6.0 min budget spent)
    09:42:51 trainprof study: … baseline running for 30 s (30 s of the 6.0 min budget spent)
    09:47:14 trainprof study: tune: trial 1 of at most 19 (baseline) done in 40 s; at most ~12.0 min left

Where the total is known (a run's steps, a ladder's trials, a study's stages) a line says
about how long is left (`time_left`).

On a terminal the live display stays (a line every 30 s would scroll the tables away).
Decided on stderr, the stream the progress goes to: `trainprof run --json > out.json`
keeps its bar on the terminal, and a log that captures stderr gets lines.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from typing import Callable, Sequence, TextIO

from trainprof.controls import visible
from trainprof.report.formatting import duration

HEARTBEAT_S = 30.0  # a log line at least this often while a stage runs: enough to see it is alive


def live_terminal() -> bool:
    """Whether rich would draw a live display on stderr (a terminal; rich's FORCE_TERMINAL and
    TTY_COMPATIBLE settings honoured)."""
    from trainprof.report.console import console

    return console(stderr=True).is_terminal


def time_left(done_s: Sequence[float], remaining: int, cap_s: float | None = None, of: str = "") -> str:
    """`~3.5 min left` (`~40 s of steps left` with `of`): `remaining` more items at the median
    of those done (`done_s`: their durations; the median, so one slow item, a compile, does
    not inflate it), never past `cap_s` (the time to a deadline the work stops at); "" before
    one item is done or when none remains."""
    if remaining <= 0 or not done_s:
        return ""
    est = statistics.median(done_s) * remaining
    if cap_s is not None:
        est = min(est, max(0.0, cap_s))
    return f"~{duration(est, 's', 'wall')}{' of ' + of if of else ''} left"


class Lines:
    """Progress as plain lines on `stream` (default stderr), each `HH:MM:SS trainprof CMD: text`.

    `line(text)` prints at once (a stage started or ended); `status(text)` sets what the
    heartbeat repeats every `heartbeat_s` (from a daemon thread, started on the first status)
    with the time since that status was set. `close()` stops the heartbeat."""

    def __init__(self, command: str, *, stream: TextIO | None = None, heartbeat_s: float = HEARTBEAT_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.command, self.stream, self.heartbeat_s, self.clock = command, stream, heartbeat_s, clock
        self._status: Callable[[], str] | str = ""
        self._since = clock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self, text: str) -> None:
        out = self.stream or sys.stderr
        with self._lock:  # visible(): a stage's reason can quote a path or an error message (controls.py)
            out.write(f"{time.strftime('%H:%M:%S')} trainprof {self.command}: {visible(text)}\n")
            out.flush()  # a log file is block-buffered: a line that waits for 4 KB is not progress

    def status(self, text: str | Callable[[], str], *, reset: bool = True) -> None:
        """What is running now (a callable is asked at each heartbeat: live figures)."""
        self._status = text
        if reset:
            self._since = self.clock()
        if self._thread is None and self.heartbeat_s > 0:
            self._thread = threading.Thread(target=self._beat, name="trainprof-progress", daemon=True)
            self._thread.start()

    def beat(self) -> None:
        """One heartbeat line now (the thread calls it every heartbeat_s)."""
        text = self._status() if callable(self._status) else self._status
        if text:
            self.line(f"… {text} (for {duration(self.clock() - self._since, 's', 'wall')})")

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            self.beat()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
