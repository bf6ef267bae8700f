"""The options every command shares, declared once: where the output goes (`OutputOptions`),
how many rows a table lists (`TopK`), and for the two commands that train and measure (`run`,
`profile`): what a run records beside its step times (`MonitorOptions`), on how many ranks
(`Ranks`), how many steps its table shows (`StepRows`).

A command's configuration holds them as sections (`output: OutputOptions = section(...,
flags=("out", "force", "json"))`) and exposes the fields it uses; the flag, its default and
its validation are the same everywhere (trainprof/flags.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from trainprof.errors import ConfigError
from trainprof.flags import option


@dataclass(frozen=True)
class OutputOptions:
    """Where a command writes and what it prints."""

    PATH: ClassVar[str] = "output"

    out: str | None = option(None, metavar="DIR")
    """output folder (default runs/<timestamp>); must not exist or be empty"""
    force: bool = False
    """replace what trainprof wrote in an existing non-empty --out (never other files)"""
    resume: bool = False
    """continue the work in --out from its journal or checkpoint"""
    resume_anyway: bool = False
    """with --resume: continue even though the configuration differs from the one in --out"""
    json: bool = False
    """print the record to stdout instead of tables"""
    report: bool = True
    """write report.html and report.md beside the records"""

    def __post_init__(self) -> None:
        if self.resume_anyway and not self.resume:
            raise ConfigError("resume_anyway", "goes with {0}", "resume", owner=self.PATH)


@dataclass(frozen=True)
class TopK:
    """How many rows a table lists: one default for `analyze`, `diff` and `whatif`, so the two
    commands that list a trace's critical path list the same ops (whatif listed 5, analyze 10).
    ncu-command's --top is another quantity, the kernels to *profile* (each replayed ~40 times
    by ncu), and keeps its own default of 5 (jobs/ncu.py)."""

    PATH: ClassVar[str] = "top"

    k: int = option(10, flag="--top", metavar="K")
    """rows per table: top-K operators and kernels, ops on the critical path"""

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or self.k < 1:
            raise ConfigError("k", "must be ≥ 1", owner=self.PATH, got=self.k)


MAX_SYSTEM_INTERVAL_S = 86400.0  # a day: an interval longer than the run takes no sample anyway


@dataclass(frozen=True)
class MonitorOptions:
    """What a measured training run records beside its step times: a torch.profiler trace of a
    few more steps and the system sampler. `run` (jobs/run_config.RunOptions) and `profile`
    (inject/options.ProfileOptions) compose it flat (`--profile-steps`, not
    `--monitor-profile-steps`), each with its own help where it means something narrower, and
    pass it down as one object: to workload/trainer.train → setup.place → the Monitor's sampler,
    and to collect/profiler.ProfileConfig.of for the trace (`profile`'s agent: inject/window.py).
    The fewest profiled steps is the command's: `run` needs one (--profile turns the trace on),
    `profile` takes 0 for no trace."""

    PATH: ClassVar[str] = "monitor"

    profile_steps: int = 2
    """steps recorded with torch.profiler after the measured ones (2 more start it up); 0: no trace"""
    with_stack: bool = False
    """record Python call sites in the trace"""
    modules: str | None = option(None, metavar="PATTERN")
    """per-module ranges in the trace only for the modules whose class or Class_N label matches this RE2
    pattern (default: every module; every op is still recorded)"""
    py_spy: bool = False
    """sample the program's Python stacks with py-spy over the profiled steps (DIR/trace.py_spy.txt)"""
    system_interval: float = option(0.5, metavar="S")
    """sample CPU/GPU utilisation, memory, IO and power every S seconds in a background thread (run.json
    "system"; 0 turns it off)"""

    def __post_init__(self) -> None:
        if not 0 <= self.system_interval <= MAX_SYSTEM_INTERVAL_S:  # 1e20 overflowed Event.wait in the sampler (#45)
            raise ConfigError("system_interval", f"must be from 0 (sampling off) to {MAX_SYSTEM_INTERVAL_S:g} s",
                              owner=self.PATH, got=self.system_interval)
        if self.modules is not None:
            from trainprof.userregex import compile_user

            compile_user(self.modules, "--modules")  # a pattern RE2 refuses: one line now, not in the program

    @property
    def sampling_s(self) -> float | None:
        """The sampler's interval, None when off (the Monitor's `system_interval_s`)."""
        return self.system_interval or None


@dataclass(frozen=True)
class Ranks:
    """How many ranks `run` and `profile` start on this machine (each command's help says how)."""

    PATH: ClassVar[str] = ""  # flat in both: `run.nproc`, `nproc`

    nproc: int = 1
    """ranks on this machine: runs the command under torchrun --standalone --nproc-per-node N"""

    def __post_init__(self) -> None:
        if self.nproc < 1:
            raise ConfigError("nproc", "must be ≥ 1", owner=self.PATH, got=self.nproc)


@dataclass(frozen=True)
class StepRows:
    """How many steps the steps table of `run` and `profile` shows (report/terminal.sample_rows
    picks them across the run)."""

    PATH: ClassVar[str] = ""  # flat in both: `rows`

    rows: int = 16
    """steps shown in the table"""

    def __post_init__(self) -> None:
        if self.rows < 1:
            raise ConfigError("rows", "must be ≥ 1", owner=self.PATH, got=self.rows)
