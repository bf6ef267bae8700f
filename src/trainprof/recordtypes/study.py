"""study.json (`trainprof study`, jobs/study.py): the plan, the budget, each stage, which file
holds which record, and the study's conclusions (the Nsight Compute plan, the configuration
chosen, the machine, the accuracy verdict and the speed-up).

The writer (jobs/study.py `write_index`) builds a `Study` and encodes it once; the report's
loader decodes the file into it (a field of the wrong type: one InputError line naming the
file and the field, exit code 2). The blocks are computed by jobs/study_extras.ncu_plan
(`ncu`), jobs/study.optimised_choice (`choice`), jobs/study_verdicts (`accuracy`,
`speedup`) and kept in the study's journal between stages. Fields are in the order the file
has always had them; a field a stage did not write (a skipped stage, a branch without it) is
UNSET and not written, so a record re-encodes as it was written. `config` is the flat
configuration (jobs/study_config.FLAT: one key per flag) and `choice.config` the sparse run
configuration (tune/reference.sparse): both dicts, as the journal and `trainprof run` keep them.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from msgspec import UNSET, UnsetType

from trainprof.recordtypes.base import Block, Num, Record

SCHEMA = "trainprof.study/2"  # /2: budget as a deadline, skipped stages, accuracy and speedup blocks
Opt = Union[Optional[Num], UnsetType]


class Stage(Block, kw_only=True):
    """One stage's row: its status (pending | running | done | skipped | failed), wall and
    expected seconds, why it was skipped or failed, how many steps its run trained."""

    stage: str
    status: str
    wall_s: Optional[Num] = None
    expected_s: Optional[Num] = None
    reason: Union[str, UnsetType] = UNSET
    steps_run: Union[int, UnsetType] = UNSET


class NcuPlan(Block, kw_only=True):
    """The Nsight Compute commands for the baseline's top kernels (jobs/study_extras.ncu_plan):
    `kernels` where the trace ran on a GPU, else `reason` (a CPU trace has none)."""

    applies: bool
    collect: Union[str, list[str]]
    export: Union[str, list[str]]
    kernels: Union[list[str], UnsetType] = UNSET
    reason: Union[str, UnsetType] = UNSET


class Choice(Block, kw_only=True):
    """Which configuration the optimised profile ran: the tune's best, the unconfirmed knobs
    or the baseline again (jobs/study.optimised_choice), and its `trainprof run` command."""

    what: str
    knobs: list[str] = []
    config: dict[str, Any] = {}
    command: Union[str, UnsetType] = UNSET
    queued_batches: Union[int, UnsetType] = UNSET
    """a program's study: batches the optimised configuration's DataLoader workers hold ready beyond the
    baseline's when its measured steps begin (jobs/study_program.extra_queue)"""


class Machine(Block, kw_only=True):
    """The baseline run's machine: cores and its sampled load ({mean, max}, or null unsampled)."""

    cpu_count: Optional[int] = None
    cpu_util_pct: Optional[dict[str, Any]] = None
    others_cpu_pct: Optional[dict[str, Any]] = None
    load_avg_1m: Optional[dict[str, Any]] = None


class Accuracy(Block, kw_only=True):
    """The tune's accuracy guard on the two profiled runs (study_verdicts.accuracy_verdict):
    `verdict` accepted | rejected, or null with `reason` when there is nothing to judge by."""

    val_base: Opt = UNSET
    val_new: Opt = UNSET
    val_delta: Opt = UNSET
    verdict: Union[Optional[str], UnsetType] = UNSET
    reason: Union[Optional[str], UnsetType] = UNSET
    same_math: Union[Optional[bool], UnsetType] = UNSET
    val_tol: Opt = UNSET
    trajectory_tol: Opt = UNSET
    loss_deviation: Opt = UNSET


class FinalSpeedup(Block, kw_only=True):
    """The one speed-up to quote (study_verdicts._final): from the verify pairs or the runs."""

    speedup: Opt = UNSET
    source: Union[str, UnsetType] = UNSET
    pairs: Union[list[Num], UnsetType] = UNSET
    min: Opt = UNSET
    max: Opt = UNSET
    base_tokens_per_s: Union[list[Num], UnsetType] = UNSET
    best_tokens_per_s: Union[list[Num], UnsetType] = UNSET
    reason: Union[Optional[str], UnsetType] = UNSET


class RunsSpeedup(Block, kw_only=True):
    """tokens/s of each run's median measured step, and their ratio."""

    base_tokens_per_s: Opt = UNSET
    new_tokens_per_s: Opt = UNSET
    speedup: Opt = UNSET
    base_tokens_per_step: Opt = UNSET
    new_tokens_per_step: Opt = UNSET
    base_step_s: Opt = UNSET
    new_step_s: Opt = UNSET
    source: Union[str, UnsetType] = UNSET


class ProfiledSpeedup(Block, kw_only=True):
    """The profiled iteration's time, per step (equal tokens) or per token."""

    base_us: Opt = UNSET
    new_us: Opt = UNSET
    source: Union[str, UnsetType] = UNSET
    per: Union[str, UnsetType] = UNSET
    base_us_per_token: Opt = UNSET
    new_us_per_token: Opt = UNSET
    speedup: Opt = UNSET


class Speedup(Block, kw_only=True):
    """Optimised ÷ baseline at equal work (study_verdicts.speedup)."""

    final: Union[FinalSpeedup, UnsetType] = UNSET
    runs: Union[RunsSpeedup, UnsetType] = UNSET
    profiled: Union[ProfiledSpeedup, UnsetType] = UNSET
    equal_tokens_per_step: Union[bool, UnsetType] = UNSET


class StopCriterion(Block, kw_only=True):
    """Seed 001's stop criterion on the optimised run (jobs/study_verdicts.stop_verdict)."""

    pct_of_achievable: Optional[Num] = None
    """the optimised run's model FLOP/s as a % of the achievable (None: unknown)"""
    threshold_pct: Num
    """stop at ≥ this % of the achievable (hardware/references.toml [stop])"""
    met: Optional[bool] = None
    """None: undecided (a lower bound below the threshold, or no % at all)"""
    basis: str = ""
    """what the % is measured against"""


class Study(Record, kw_only=True):
    schema: str = SCHEMA
    config: dict[str, Any] = {}
    budget_s: Opt = UNSET
    spent_s: Opt = UNSET
    budget_note: Union[Optional[str], UnsetType] = UNSET
    stages: list[Stage] = []
    records: dict[str, str] = {}
    """Bundle attribute -> the file that holds it, relative to the study folder"""
    config_changes: Union[list[Any], UnsetType] = UNSET
    """what a resume changed (jobs/study_resume.py), when it changed anything"""
    ncu: Union[NcuPlan, UnsetType] = UNSET
    choice: Union[Choice, UnsetType] = UNSET
    machine: Union[Machine, UnsetType] = UNSET
    accuracy: Union[Accuracy, UnsetType] = UNSET
    speedup: Union[Speedup, UnsetType] = UNSET
    stop: Union[StopCriterion, UnsetType] = UNSET
    """is the optimised configuration close enough to the achievable that tuning can stop"""
    spent_before_s: Opt = UNSET
    """spent when the report stage began (the report's figure: what it took is not in it)"""
