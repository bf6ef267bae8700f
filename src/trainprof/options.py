"""The options every command shares, declared once: where the output goes (`OutputOptions`)
and how many rows a table lists (`TopK`).

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
