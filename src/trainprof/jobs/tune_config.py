"""`trainprof tune`'s configuration: the baseline's pinned workload fields (`train`), the
ladder (`tune`: tune/config.py), the budget, where it goes (`output`) and, for `tune --
COMMAND`, how the trials run the user's program (`program`); every flag of the command is one
of these fields (trainprof/flags.py). jobs/tune.py runs it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from trainprof.errors import ConfigError, UsageError
from trainprof.flags import option, section
from trainprof.options import OutputOptions
from trainprof.tune.config import ProgramTune, TuneConfig
from trainprof.tune.reference import PINNED
from trainprof.workload.config import TrainConfig


@dataclass(frozen=True)
class TuneJob:
    """`trainprof tune`'s configuration (its flags: trainprof/flags.py)."""

    train: TrainConfig = section(TrainConfig(dtype="fp32", steps=10, eval_batches=4), flags=PINNED, helps={
        "dtype": "the baseline's dtype (mixed precision is a knob)",
        "steps": "steps per trial (with -- COMMAND: the program's steps measured after --warmup)",
        "warmup_steps": "warm-up steps per trial, excluded from its timing",
        "eval_batches": "validation batches per trial"})
    """the baseline: the fields tune/reference.PINNED are flags, the knobs change the others"""
    tune: TuneConfig = section(TuneConfig())
    """what the ladder tries and keeps"""
    budget_minutes: float = 15.0
    """wall time for the whole tune (verify pairs included): a trial starts only when it fits, and one
    running at the deadline ends at a step boundary"""
    output: OutputOptions = section(OutputOptions(), flags=("out", "resume", "resume_anyway", "force", "json", "report"),
                                    helps={"out": "output folder (default runs/tune-<timestamp>)",
                                           "resume": "continue the tune in --out from its journal",
                                           "resume_anyway": "with --resume and -- COMMAND: continue even though the "
                                           "command or its options differ from the tune's in --out",
                                           "force": "replace an existing non-empty --out (at the start)",
                                           "json": "print tune.json to stdout"})
    """where the tune goes"""
    program: ProgramTune = section(ProgramTune(), group="your program (-- COMMAND)")
    """how the trials run the user's program (program mode)"""
    command: tuple[str, ...] = option((), positional=True, nargs=argparse.REMAINDER, metavar="COMMAND")
    """your training command, after --: tune it unchanged (program mode; default: the reference workload)"""

    def __post_init__(self) -> None:
        self.tune.check_mode(program=bool(self.argv))
        if self.argv:
            self._program_mode()
        elif self.program.arg_knob or self.program.env_knob or self.program.warmup != ProgramTune.warmup:
            raise UsageError("--arg-knob, --env-knob and --warmup tune your own program: give its command after --, "
                             "e.g. trainprof tune --arg-knob \"--batch-size=32,64\" -- python train.py")
        steps, warmup = self.train.steps, self.train.warmup_steps
        if steps < 2:
            raise ConfigError(("train", "steps"), "must be ≥ 2 (a measured step after the warm-up)", got=steps)
        if warmup >= steps and not self.argv:  # a program's warm-up is --warmup, before its --steps
            raise ConfigError(("train", "warmup_steps"), f"must be below {{0}} ({steps})", ("train", "steps"),
                              got=warmup)
        if not self.budget_minutes > 0:
            raise ConfigError("budget_minutes", "must be > 0", got=self.budget_minutes)

    def _program_mode(self) -> None:
        """With a COMMAND the reference workload's flags mean nothing: refused, named."""
        from trainprof.flags import flag
        from trainprof.tune.reference import changed

        given = [k for k in changed(TuneJob.__dataclass_fields__["train"].default, self.train) if k != "steps"]
        if given:
            raise UsageError(f"{', '.join(flag(k) for k in given)}: the reference workload's (--preset); with -- COMMAND "
                             "your program runs as it is (tune its own flags with --arg-knob)")

    def rungs(self) -> int:
        """Knobs on the ladder at most (the progress's "trial 3 of at most 9")."""
        if not self.argv:
            return len(self.tune.ladder())
        from trainprof.tune.program import NAMES, parse_arg_knob, parse_env_knob

        names = self.tune.program_names()
        user = sum(len(parse_arg_knob(t)[1]) for t in self.program.arg_knob) \
            + sum(len(parse_env_knob(t)[1]) for t in self.program.env_knob)
        return user + len(NAMES if names is None else names)

    @property
    def argv(self) -> list[str]:
        """The user's command, as typed after -- (empty: the reference workload)."""
        return list(self.command[1:] if self.command[:1] == ("--",) else self.command)

    @property
    def out(self) -> Path | None:
        """the tune's folder; None: runs/tune-<timestamp>"""
        return Path(self.output.out) if self.output.out else None
