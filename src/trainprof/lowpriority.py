"""trainprof's own work beside the user's running program, at idle CPU priority.

`trainprof profile` writes the run folder as soon as the window is recorded, while the
program trains on (a job of days need not end for its profile). That analysis is ours, not
the program's: on a busy 2-core machine, at normal priority, it made nanoGPT's later
iterations 1.68× slower in wall time (issue #37). Under SCHED_IDLE (Linux) the scheduler
gives this thread, and the threads it starts, only CPU time no other task wants: on a machine
the program keeps busy the analysis waits, on idle cores it runs at full speed. Measured
with benchmarks/profile_overhead.py (docs/benchmarks.md).

Where SCHED_IDLE does not exist (macOS, Windows), the largest nice value is used instead.
Going back to normal priority needs no privilege for nice 0 → SCHED_OTHER on Linux ≥ 2.6.39
within RLIMIT_NICE; where it is refused the rest of the run stays at idle priority (it then
only writes the program's status line).
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator


@contextlib.contextmanager
def idle_cpu() -> Iterator[str]:
    """Run the block at idle priority; yields how ("SCHED_IDLE", "nice 19" or "unchanged")."""
    if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_IDLE"):
        try:
            policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            pass
        else:
            try:
                yield "SCHED_IDLE"
            finally:
                with contextlib.suppress(OSError):
                    os.sched_setscheduler(0, policy, param)
            return
    if hasattr(os, "nice"):
        try:
            before = os.nice(0)
            os.nice(19 - before)
        except OSError:
            pass
        else:
            yield "nice 19"  # a process-wide nice cannot be lowered again without privilege: it stays
            return
    yield "unchanged"
