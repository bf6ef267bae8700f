"""The study's budget: one wall-clock deadline for every stage (issue #32: `--budget-minutes 6`
took 26.6 min on a busy machine, its tune planned 14.6 min inside the 6).

    deadline = this session's start + budget − what earlier sessions spent

Each stage gets what is left: it starts only when its estimated cost (from what was measured
so far) fits before the deadline with room for the stages after it, else it is skipped with
that reason; a stage in progress ends at a step boundary when the deadline comes (the runs'
`--stop-at`, the ladder's trials), and a process still running KILL_GRACE_S after its deadline
(stuck in start-up or compilation, before a step could stop it) is killed. So what a study
spends is at most its budget + one step, or + KILL_GRACE_S. The first estimates come from
the baseline run:

    one run of N steps  = fixed + N × median step       fixed = baseline wall − its steps × median
    one tune trial      = fixed − profiler steps × median + tune_steps × median

(`fixed`: process start, data, validation, the profiled steps and their analysis). Before the
baseline nothing is measured: it may take at most BASELINE_SHARE of the time left, the
optimised run is expected to take as long, and the tune gets what is left between them.

What was spent is journaled: every entry a session writes carries `session_spent_s` (a
stage's end, a skip, a failure, and a heartbeat every 30 s while a stage runs), so a resumed
study knows what earlier sessions spent, within a heartbeat after a `kill -9`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable

# Before the baseline has run, it may use this share of the time left: the optimised run
# takes as long and the tune needs at least three trials between them (a larger share left
# a 6-minute study with a baseline and nothing else).
BASELINE_SHARE = 0.25
# Priors for the stages that run in this process: the diff (two trace analyses) took 1-2 s and
# the report 0-3 s on the tiny preset here, under load (docs/study.md); 10 s leaves room.
DIFF_S = 10.0
REPORT_S = 10.0
# A `trainprof run` child after its last step: analysing its trace, findings, writing run.json
# (~2-5 s on the tiny preset's one profiled step); its --stop-at comes this much earlier.
POST_RUN_S = 8.0


@dataclass
class Budget:
    """The deadline of this session and what the study has spent (`clock`: time.time, injected in tests)."""

    total_s: float
    """the study's budget: the original one, or on a resume with --budget-minutes, what earlier
    sessions spent + the new minutes"""
    spent_before_s: float
    """wall time the journal says earlier sessions spent"""
    started: float
    """clock() when this session began"""
    clock: Callable[[], float] = time.time
    note: str = ""
    """how the budget was set, in words (a resumed study's)"""

    @property
    def deadline(self) -> float:
        return self.started + self.total_s - self.spent_before_s

    def session_s(self) -> float:
        return self.clock() - self.started

    def spent_s(self) -> float:
        return self.spent_before_s + self.session_s()

    def left_s(self) -> float:
        return self.deadline - self.clock()


def spent_in_journal(entries: Iterable[dict]) -> float:
    """Σ over the sessions of the journal (each opened by a `session` entry) of the largest
    `session_spent_s` that session wrote; a journal from before sessions were recorded
    (trainprof.study/1): its finished stages' wall times."""
    entries = list(entries)
    if not any(e.get("stage") == "session" for e in entries):
        return sum(float(e.get("wall_s") or 0.0) for e in entries if e.get("status") == "done")
    total, current = 0.0, 0.0
    for e in entries:
        if e.get("stage") == "session":
            total, current = total + current, 0.0
        elif isinstance(e.get("session_spent_s"), (int, float)):
            current = max(current, float(e["session_spent_s"]))
    return total + current


def fixed_s(baseline: dict) -> float:
    """The baseline run's cost beyond its measured steps (process start, data, validation,
    profiled steps, analysis)."""
    wall, n, step = baseline.get("wall_s"), baseline.get("steps_run") or 0, baseline.get("step_time_median_s")
    if wall is None or step is None:  # a journal without them (null is typed as absent): no fixed cost known
        return 0.0
    return max(0.0, wall - n * step)


def run_estimate_s(baseline: dict, steps: int) -> float:
    """A profiled `trainprof run` of `steps` steps, like the baseline's."""
    return fixed_s(baseline) + steps * (baseline.get("step_time_median_s") or 0.0)


def trial_estimate_s(baseline: dict, tune_steps: int, profile_steps: int) -> float:
    """One tune trial: the baseline's fixed cost without its profiler steps (wait, warm-up and
    the recorded ones), plus tune_steps of its median step."""
    step = baseline["step_time_median_s"]
    return max(0.0, fixed_s(baseline) - (profile_steps + 2) * step) + tune_steps * step
