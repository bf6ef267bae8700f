"""The optimisation ladder's settings, declared once: `trainprof tune` and a study's tune stage
hold a `TuneConfig` (jobs/tune_config.TuneJob.tune, jobs/study_config.StudyConfig.tune), and the
ladder's own defaults read it (tune/ladder_config.LadderConfig).

Decided defaults (docs/configuration.md, "Defaults unified"): a knob is kept when ≥ 3%
faster (the smallest gain the verify pairs resolve on a shared machine), and 3 verify pairs,
for tune and study alike (a study had 2): the median of three ratios is one measured pair,
which one outlier cannot move, where the "median" of two is their mean; pairs beyond the
first start only when they fit in the time left, so the larger default costs a short budget
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from trainprof.errors import ConfigError
from trainprof.flags import option

if TYPE_CHECKING:
    from trainprof.tune.catalogue import Knob


def parse_knobs(text: str, flag: str) -> tuple[str, ...] | None:
    """`--knobs a, b,,c` → ('a', 'b', 'c'); nothing named → None (the speed ladder)."""
    names = tuple(k.strip() for k in text.split(",") if k.strip())
    return names or None


NONE = "none"  # `--knobs none`: with a program, only its own --arg-knob/--env-knob


def _names(program: bool) -> tuple[str, ...]:
    if program:
        from trainprof.tune.program import NAMES

        return NAMES
    from trainprof.tune.catalogue import KNOBS

    return tuple(k.name for k in KNOBS)


@dataclass(frozen=True)
class TuneConfig:
    """What the ladder tries and what it keeps."""

    PATH: ClassVar[str] = "tune"

    knobs: tuple[str, ...] | None = option(None, parse=parse_knobs, metavar="a,b", show=",".join)
    """comma-separated subset of the tune catalogue, in order (default: the speed ladder; with -- COMMAND the
    program catalogue, `none`: only --arg-knob/--env-knob)"""
    min_gain: float = 0.03
    """keep a knob only if ≥ this much faster than the best so far (0.03: 1.03×)"""
    verify_trials: int = 3
    """best-vs-baseline pairs that confirm the result at the end (0: none)"""

    def __post_init__(self) -> None:
        if self.knobs is not None:
            known = [*_names(False), *_names(True), NONE]
            unknown = [k for k in self.knobs if k not in known]
            if unknown:
                raise ConfigError("knobs", f"names no knob {', '.join(unknown)}; choose from {', '.join(_names(False))} "
                                  f"(the reference workload) or {', '.join(_names(True))} (-- COMMAND)",
                                  owner=self.PATH)
        if not self.min_gain >= 0:
            raise ConfigError("min_gain", "must be ≥ 0", owner=self.PATH, got=self.min_gain)
        if not isinstance(self.verify_trials, int) or self.verify_trials < 0:
            raise ConfigError("verify_trials", "must be ≥ 0", owner=self.PATH, got=self.verify_trials)

    def check_mode(self, program: bool, at: tuple[str, ...] = ("tune",), owner: str = "") -> None:
        """Refuse a knob of the other mode's catalogue: the reference workload's (`--preset`) or a
        program's (`-- COMMAND`); `none` (no knob of the catalogue) only with a program. Called by
        the job holding this section (`at`: its path there; `owner`: the job's own PATH)."""
        if self.knobs is None:
            return
        known = _names(program) + ((NONE,) if program else ())
        wrong = [k for k in self.knobs if k not in known]
        if wrong:
            where = "a program (-- COMMAND)" if program else "the reference workload"
            raise ConfigError((*at, "knobs"), f"names {', '.join(wrong)}, not a knob for {where}; choose from "
                              f"{', '.join(known)}", owner=owner)

    def program_names(self) -> tuple[str, ...] | None:
        """The program catalogue's knobs named (None: all; (): `none`)."""
        if self.knobs is None:
            return None
        return tuple(k for k in self.knobs if k != NONE)

    def ladder(self) -> tuple[Knob, ...]:
        """The knobs tried, in order: those named, else the catalogue's speed knobs (the
        memory-for-speed knobs are tried only when named)."""
        from trainprof.tune.catalogue import KNOBS, by_name

        return by_name(list(self.knobs)) if self.knobs else tuple(k for k in KNOBS if k.speed)


@dataclass(frozen=True)
class ProgramTune:
    """`trainprof tune -- COMMAND`: how each trial runs the user's program (docs/tuning.md, "Program mode")."""

    PATH: ClassVar[str] = "program"

    warmup: int = 3
    """with -- COMMAND: the program's steps each trial leaves out before measuring (≥ 3: step 0 is its cold start,
    step 1 the first with compile/autocast, the last one's FLOPs are counted)"""
    arg_knob: tuple[str, ...] = option((), repeat=True, metavar="--FLAG=a,b")
    """with -- COMMAND: a flag of your program and the values to try (repeatable), e.g. "--batch-size=32,64,128";
    each value is a rung, the command line rewritten per trial"""
    env_knob: tuple[str, ...] = option((), repeat=True, metavar="NAME=a,b")
    """with -- COMMAND: an environment variable and the values to try (repeatable), e.g. OMP_NUM_THREADS=1,2"""
    step_marker: str | None = option(None, metavar="MODULE:QUALNAME")
    """with -- COMMAND: the function whose return is one step, for a program that never calls optimizer.step()
    (as for `trainprof profile`)"""

    def __post_init__(self) -> None:
        if not isinstance(self.warmup, int) or self.warmup < 3:
            raise ConfigError("warmup", "must be ≥ 3 (step 0: the cold start; step 1: the first with compile or "
                              "autocast; the last warm-up step is FLOP-counted)", owner=self.PATH, got=self.warmup)
        from trainprof.tune.program import parse_arg_knob, parse_env_knob

        for t in self.arg_knob:
            parse_arg_knob(t)
        for t in self.env_knob:
            parse_env_knob(t)
        mod, sep, qual = (self.step_marker or "x:x").partition(":")
        if not sep or not all(p.isidentifier() for p in [*mod.split("."), *qual.split(".")]):
            raise ConfigError("step_marker", "must be MODULE:QUALNAME (e.g. train:train_step)", owner=self.PATH,
                              got=self.step_marker)
