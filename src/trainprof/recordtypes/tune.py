"""tune.json (`trainprof tune`, a study's tune stage): the optimisation ladder, the accuracy
guard's tolerance, and the best configuration with its verification. tune/ladder.py runs it,
building its rungs (`Trial`), the guard's `Tolerance` and the `Verify` pairs as these Structs;
tune/record.py places them in this record.

Configurations stay dicts: they are the sparse TrainConfig form (tune/reference.sparse),
whose keys are the config dataclass's fields. A trial the ladder skipped has no
measurements: those fields are UNSET there (absent from the file, as before, not null);
`known()` (base.py) tells a measured value from an absent or null one.

Required, as report/schemas.py required before the record was typed: the baseline's
config and speed, the trials' knobs, the best's config and speed-up.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import Block, Num, Record

SCHEMA = "trainprof.tune/1"
Config = dict[str, Any]  # sparse TrainConfig fields (tune/reference.sparse)


class TuneBaseline(Block, kw_only=True):
    config: Config
    step_time_s: Num
    """median measured step"""
    tokens_per_s: Num
    mfu: Optional[Num] = None
    peak_memory_bytes: Optional[int] = None
    val_loss: Optional[Num] = None
    command: str = ""
    """the `trainprof run` command line that reproduces it"""


class Tolerance(Block, kw_only=True):
    """The accuracy guard, calibrated on two baseline seeds (tune/guard.py)."""

    trajectory_tol: Num
    """mean |Δloss| over the measured steps allowed vs the baseline"""
    val_tol: Num
    """validation loss allowed above the baseline's"""
    seed_trajectory_noise: Optional[Num] = None
    seed_val_noise: Optional[Num] = None
    single_seed: Union[bool, UnsetType] = UNSET
    """True when the budget left no time for the second baseline seed: the floors only"""
    rule: Union[str, UnsetType] = UNSET
    """a program's guard (tune/guard.ProgramGuard): where trajectory_tol comes from, in words"""
    changed_tol: Union[Num, UnsetType] = UNSET
    """a program's guard: how far a knob that changes what is learned may raise the mean loss"""
    loss_scale: Union[Num, UnsetType] = UNSET
    """a program's guard: the baseline's mean |loss| over the measured steps (the floors' scale)"""


class Trial(Block, kw_only=True):
    """One rung of the ladder: the knob on top of the knobs kept so far."""

    knob: str
    description: Optional[str] = None
    cost: Optional[str] = None
    """what the knob gives up (memory, numerics, start-up time)"""
    config: Union[Config, UnsetType] = UNSET
    ok: Union[bool, UnsetType] = UNSET
    """the run finished (no OOM, no crash)"""
    step_time_s: Union[Num, UnsetType] = UNSET
    tokens_per_s: Union[Num, UnsetType] = UNSET
    speedup: Union[Optional[Num], UnsetType] = UNSET
    """tokens/s over the baseline's"""
    step_gain: Union[Optional[Num], UnsetType] = UNSET
    """tokens/s over the best so far's (the keep/reject test)"""
    mfu: Union[Optional[Num], UnsetType] = UNSET
    peak_memory_bytes: Union[Optional[int], UnsetType] = UNSET
    compile_s: Union[Num, UnsetType] = UNSET
    """warm-up time beyond steady state, excluded from the speed"""
    val_loss: Union[Optional[Num], UnsetType] = UNSET
    tokens_per_step: Union[int, UnsetType] = UNSET
    """tokens per optimizer step (micro-batch × sequence × accumulation): speeds compare per token"""
    loss_deviation: Union[Optional[Num], UnsetType] = UNSET
    """mean |Δloss| vs the reference trajectory at the same tokens seen (the guard's evidence)"""
    loss_reference: Union[str, UnsetType] = UNSET
    """the knob whose trial the trajectory was compared with (a kept knob that changed what is learned);
    absent: the baseline's"""
    val_delta: Union[Optional[Num], UnsetType] = UNSET
    """validation loss − the baseline's (> 0 is worse)"""
    same_math: Union[bool, UnsetType] = UNSET
    accuracy_ok: Union[bool, UnsetType] = UNSET
    accepted: bool = False
    reason: Optional[str] = None
    """why not kept (or skipped)"""
    skipped: bool = False
    notes: Union[dict[str, Any], UnsetType] = UNSET
    """a program trial's: what the agent changed and where (inject/knobs.py), the trial's batch unit and data wait"""
    patch: Union[list[str], UnsetType] = UNSET
    """a program knob's: the code change that makes it permanent (tune/patches.py)"""


class VerifyPair(Block, kw_only=True):
    base_tokens_per_s: Num
    best_tokens_per_s: Num
    ratio: Num


class Verify(Block, kw_only=True):
    """Best vs baseline in alternating pairs (drift hits both); median of the ratios."""

    pairs: list[VerifyPair] = []
    speedup_median: Optional[Num] = None
    speedup_min: Optional[Num] = None
    speedup_max: Optional[Num] = None
    baseline_spread: Union[Optional[Num], UnsetType] = UNSET
    """max/min tokens/s over the baseline's runs (above 1.5: an unstable machine)"""
    verdict: Union[str, UnsetType] = UNSET
    skipped_pairs: Union[int, UnsetType] = UNSET
    """pairs not run: the time budget left no room for them (or one was stopped at the deadline)"""
    skipped_reason: Union[str, UnsetType] = UNSET


class Unconfirmed(Block, kw_only=True):
    """Knobs the single trials kept but the verify pairs did not confirm."""

    knobs: list[str] = []
    reason: str = ""
    command: str = ""
    config: Config = {}


class TuneBest(Block, kw_only=True):
    config: Config
    speedup: Num
    """verified (median of the pairs) where pairs ran; 1.0 for the baseline"""
    verify: Optional[Verify] = None
    command: str = ""
    knobs: list[str] = []
    """the knobs kept, in ladder order; [] when the baseline stays the best"""
    verdict: Union[str, UnsetType] = UNSET
    unconfirmed: Union[Unconfirmed, UnsetType] = UNSET


class Applied(Block, kw_only=True):
    """One kept knob of a program, with the change that makes it permanent."""

    knob: str
    patch: list[str] = []
    speedup: Optional[Num] = None
    """its trial's throughput over the best before it (step_gain)"""


class ProgramTuneBlock(Block, kw_only=True):
    """`trainprof tune -- COMMAND`: the program and what its baseline's profile found."""

    command: list[str]
    """the command as typed (secret-looking values redacted)"""
    warmup: int
    steps: int
    """measured steps per trial"""
    unit: Optional[str] = None
    """what tokens_per_s counts: tokens or samples (per item, so batch sizes compare)"""
    baseline_data_s: Optional[Num] = None
    """the baseline's median wait for data per step: what DataLoader knobs can remove at most"""
    facts: dict[str, Any] = {}
    apply: list[Applied] = []
    """"apply these to your code": the kept knobs' patches, in ladder order"""


class Tune(Record, kw_only=True):
    schema: str = SCHEMA
    baseline: TuneBaseline
    tolerance: Optional[Tolerance] = None
    min_speedup: Union[Num, UnsetType] = UNSET
    """the keep rule: a knob stays only at ≥ this × the current best (1 + min_gain); UNSET in
    files written before it was recorded"""
    trials: list[Trial]
    best: TuneBest
    program: Union[ProgramTuneBlock, UnsetType] = UNSET
    """`trainprof tune -- COMMAND`'s; UNSET for the reference workload"""
