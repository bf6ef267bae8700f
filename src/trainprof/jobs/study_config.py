"""`trainprof study`'s configuration: the workload (`train`), the ladder (`tune`) and the
study's own fields, composed as torchtitan composes its JobConfig; `StudyJob` adds where
the study goes. The flags are generated from these fields (trainprof/flags.py), so a study
takes `--dtype` with `run`'s choices and refuses `--dtype fp64` before any folder exists.

The journal and study.json keep the configuration flat, one key per flag
(`{"preset": ..., "steps": 30, "knobs": [...], "tune_steps": 10, ...}`, `record()`), as they
did before the tree: a study folder written earlier still resumes and renders, and
`--resume` compares the flags given with the journal key by key (jobs/study_resume.py).
"""

from __future__ import annotations

import dataclasses
import argparse
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Mapping

from trainprof.errors import ConfigError, UsageError
from trainprof.flags import option, section
from trainprof.options import OutputOptions
from trainprof.tune.config import ProgramTune, TuneConfig
from trainprof.workload.config import TrainConfig

# The TrainConfig fields a study takes as flags; the tune's knobs change the others.
TRAIN_FLAGS = ("preset", "device", "micro_batch", "seq_len", "dtype", "steps", "warmup_steps", "eval_batches", "seed",
               "data")
# The flat record (journal, study.json "config"): the flags, in the order studies have written them.
RECORD = {"preset": "train", "device": "train", "micro_batch": "train", "seq_len": "train", "dtype": "train",
          "steps": "train", "warmup_steps": "train", "eval_batches": "train", "profile_steps": "",
          "tune_steps": "", "verify_trials": "tune", "knobs": "tune", "min_gain": "tune", "budget_minutes": "",
          "seed": "train", "data": "train"}
# Program mode (`study -- COMMAND`) adds these to the record; a preset study's record stays as it was.
PROGRAM_RECORD = {"command": "", "warmup": "program", "arg_knob": "program", "env_knob": "program"}


@dataclass(frozen=True)
class StudyConfig:
    """What a study measures and tunes."""

    PATH: ClassVar[str] = "study"

    train: TrainConfig = section(TrainConfig(dtype="fp32", steps=30), flags=TRAIN_FLAGS, helps={
        "dtype": "the baseline's dtype: mixed precision is one of the knobs tried",
        "steps": "optimizer steps of the baseline and the optimised run (validation loss after them)",
        "warmup_steps": "steps left out of each run's summary",
        "eval_batches": "validation batches after each run (the accuracy check needs ≥ 1)"})
    """the baseline's workload (its steps: the baseline's and the optimised run's)"""
    tune: TuneConfig = section(TuneConfig())
    """the tune stage's ladder"""
    tune_steps: int = 10
    """steps per tune trial"""
    profile_steps: int = 1
    """iterations recorded by torch.profiler (the assignment profiles one)"""
    budget_minutes: float = 15.0
    """wall time for the whole study: a deadline for every stage, each skipped when it cannot finish in what
    is left; with --resume, a new budget from now"""
    program: ProgramTune = section(ProgramTune(), group="your program (-- COMMAND)")
    """how the stages run the user's program (program mode, jobs/study_program.py)"""
    command: tuple[str, ...] = option((), positional=True, nargs=argparse.REMAINDER, metavar="COMMAND")
    """your training command, after --: study it unchanged (program mode; default: the reference workload)"""

    @property
    def argv(self) -> list[str]:
        """The user's command, as typed after -- (empty: the reference workload)."""
        return list(self.command[1:] if self.command[:1] == ("--",) else self.command)

    def __post_init__(self) -> None:
        self.tune.check_mode(program=bool(self.argv), at=("tune",), owner=self.PATH)
        if self.argv:
            self._program_mode()
        elif self.program != ProgramTune():
            raise UsageError("--arg-knob, --env-knob and --warmup study your own program: give its command after --, "
                             "e.g. trainprof study --arg-knob \"--batch-size=32,64\" -- python train.py")
        t = self.train
        if t.steps < 3:
            raise ConfigError(("train", "steps"), "must be ≥ 3", owner=self.PATH, got=t.steps)
        for limit, name in ((t.steps, ("train", "steps")), (self.tune_steps, ("tune_steps",))):
            if t.warmup_steps >= limit:
                raise ConfigError(("train", "warmup_steps"), f"must be below {{0}} ({limit})", name, owner=self.PATH,
                                  got=t.warmup_steps)
        if t.eval_batches < 1:
            raise ConfigError(("train", "eval_batches"), "must be ≥ 1 (the accuracy check needs a validation loss)",
                              owner=self.PATH, got=t.eval_batches)
        if not isinstance(self.tune_steps, int) or self.tune_steps < 3:
            raise ConfigError("tune_steps", "must be ≥ 3", owner=self.PATH, got=self.tune_steps)
        if not isinstance(self.profile_steps, int) or self.profile_steps < 1:
            raise ConfigError("profile_steps", "must be ≥ 1", owner=self.PATH, got=self.profile_steps)
        if not self.budget_minutes > 0:
            raise ConfigError("budget_minutes", "must be > 0", owner=self.PATH, got=self.budget_minutes)

    def _program_mode(self) -> None:
        """With a COMMAND the reference workload's flags mean nothing: refused, named (as `tune -- COMMAND`)."""
        from trainprof.flags import flag
        from trainprof.tune.reference import changed

        given = [k for k in changed(StudyConfig.__dataclass_fields__["train"].default, self.train) if k != "steps"]
        if given:
            raise UsageError(f"{', '.join(flag(k) for k in given)}: the reference workload's (--preset); with -- COMMAND "
                             "your program runs as it is (tune its own flags with --arg-knob)")

    def record(self) -> dict[str, Any]:
        """The flat form the journal and study.json keep: one key per flag, then any other
        workload field an API caller changed (TrainConfig's names collide with none); a
        program's study adds its command and program options (PROGRAM_RECORD)."""
        out = {k: getattr(self._section(where), k) for k, where in RECORD.items()}
        if self.argv:
            out.update({k: list(self.argv) if k == "command" else
                        (list(v) if isinstance(v := getattr(self._section(w), k), tuple) else v)
                        for k, w in PROGRAM_RECORD.items()})
        default = StudyConfig().train
        out.update({f.name: getattr(self.train, f.name) for f in dataclasses.fields(TrainConfig)
                    if f.name not in out and getattr(self.train, f.name) != getattr(default, f.name)})
        return out

    @classmethod
    def from_record(cls, d: Mapping[str, Any]) -> "StudyConfig":
        """The inverse of `record` (keys it does not know are left out: a newer journal's)."""
        train_names = {f.name for f in dataclasses.fields(TrainConfig)}
        base = cls()
        train = {k: v for k, v in d.items() if k in train_names}
        tune = {k: v for k, v in d.items() if RECORD.get(k) == "tune"}
        if tune.get("knobs") is not None:
            tune["knobs"] = tuple(tune["knobs"]) or None
        own = {k: v for k, v in d.items() if RECORD.get(k) == ""}
        program = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()
                   if PROGRAM_RECORD.get(k) == "program"}
        if d.get("command"):
            own["command"] = tuple(d["command"])
        return replace(base, train=replace(base.train, **train), tune=replace(base.tune, **tune),
                       program=replace(base.program, **program), **own)

    def _section(self, where: str) -> Any:
        return getattr(self, where) if where else self

    def run_config(self, steps: int) -> dict[str, Any]:
        """The `trainprof run` configuration of the baseline, in tune.json's sparse form."""
        from trainprof.backends import resolve_device
        from trainprof.tune.reference import sparse

        cfg = replace(self.train, steps=steps).resolved()
        return sparse(replace(cfg, device=resolve_device(cfg.device)))


@dataclass(frozen=True)
class StudyJob:
    """`trainprof study`'s configuration: the study, and where it goes."""

    study: StudyConfig = section(StudyConfig())
    """what the study measures and tunes (journaled)"""
    output: OutputOptions = section(OutputOptions(), flags=("out", "resume", "resume_anyway", "force"), helps={
        "out": "study folder (default runs/study-<timestamp>)",
        "resume": "continue the study in --out from its journal: a configuration flag that differs from the "
                  "study's is refused; its budget is what is left of the original, or --budget-minutes from now",
        "resume_anyway": "with --resume: continue even though --preset, --steps, --knobs, ... differ from the "
                         "study's (the stages still to run take the new values)",
        "force": "replace an existing non-empty --out"})
    """where the study goes"""
