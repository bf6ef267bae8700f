"""How one ladder runs, composed once by its caller (jobs/tune.climb, jobs/tune_program.climb_program,
a study's tune stage through them, or a user's own code) and handed to `run_ladder` whole, instead
of 13 keyword arguments passed down one by one (issue #44 item 3).

    run_ladder(runner, knobs, base, LadderConfig.of(tune, device="cuda", budget_s=900), journal)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Union

from trainprof.tune.config import TuneConfig
from trainprof.tune.guard import Guard, ProgramGuard
from trainprof.tune.reference import sparse


@dataclass(frozen=True)
class LadderConfig:
    """What the ladder keeps, how long it may take, what its configurations are, and whom it tells."""

    device: str = "cpu"
    """the device kind a knob's `apply` is given ("cuda", "cpu": which knobs apply)"""
    guard: Union[Guard, ProgramGuard] = Guard()
    """the accuracy guard (a program's: ProgramGuard)"""
    min_gain: float = TuneConfig.min_gain
    """keep a knob only at ≥ 1 + this × the best so far (an API caller may pass a negative one to let only the
    guard reject)"""
    verify_trials: int = TuneConfig.verify_trials
    """best-vs-baseline pairs at the end (0: none)"""
    deadline: float | None = None
    """no trial starts unless it fits before this `clock()` time"""
    budget_s: float | None = None
    """without a deadline: now + this − the wall time the journal already holds (neither: no time limit)"""
    clock: Callable[[], float] = time.time
    """the time (a study's fake clock in its tests)"""
    estimate_s: float | None = None
    """a trial's expected wall time before any has run (a study's estimate from its baseline)"""
    shown: Callable[[Any], dict] = sparse
    """a configuration as tune.json shows it and trial ids hash it (default: a TrainConfig's sparse form)"""
    rerun: Callable[[Any], Any] | None = None
    """the baseline's second run (default: the next seed; a program's: the same configuration again)"""
    on_trial: Callable[[dict], None] | None = None
    """told each finished trial's journal entry (the progress bar, a study's events)"""
    on_begin: Callable[[str], None] | None = None
    """told the knob of each trial as it starts"""

    @classmethod
    def of(cls, tune: TuneConfig, **rest: Any) -> LadderConfig:
        """The ladder of a command's `tune` section (`--min-gain`, `--verify-trials`) and the rest."""
        return cls(min_gain=tune.min_gain, verify_trials=tune.verify_trials, **rest)
