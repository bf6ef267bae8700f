"""`trainprof profile`'s configuration: what the agent measures (`profile`:
inject/options.ProfileOptions, which the agent reads, so it lives below jobs/), the peaks, the
ranks, the output and the user's COMMAND; every flag of the command is one of these fields
(trainprof/flags.py). jobs/profile.py runs it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Literal

from trainprof.errors import ConfigError
from trainprof.flags import option, section
from trainprof.hardware.overrides import PeakOverrides
from trainprof.inject.options import Knobs, ProfileOptions
from trainprof.options import OutputOptions, Ranks, StepRows

RANKS_AND_OUTPUT = "ranks and output"  # the --help group


@dataclass(frozen=True)
class ProfileJob:
    """`trainprof profile`'s configuration (its flags: trainprof/flags.py)."""

    profile: ProfileOptions = section(ProfileOptions(), group="measuring")
    """what the agent measures"""
    peaks: PeakOverrides = section(PeakOverrides(), group="peaks")
    """the user's peaks for MFU/HFU and the roofline"""
    ranks: Ranks = section(Ranks(), flat=True, group=RANKS_AND_OUTPUT)
    """how many ranks (options.Ranks, shared with `run`)"""
    output: OutputOptions = section(OutputOptions(), flags=("out", "force", "report"), group=RANKS_AND_OUTPUT,
                                    helps={"force": "replace an existing non-empty --out once the new one is complete"})
    """the run folder"""
    table: StepRows = section(StepRows(), flat=True, group=RANKS_AND_OUTPUT)
    """the steps table (options.StepRows, shared with `run`)"""
    analysis: Literal["idle", "after"] = option("idle", group=RANKS_AND_OUTPUT)
    """when the run folder is analysed if the program trains on after the window: idle (at once, at idle CPU
    priority: it takes only CPU time the program leaves) or after (once the program has ended)"""
    knobs: str | None = option(None, flag="--agent-knobs", hidden=True, metavar="JSON")
    """a `trainprof tune -- COMMAND` trial's knobs (inject/options.Knobs as JSON): plumbing, not for users"""
    command: tuple[str, ...] = option((), positional=True, nargs=argparse.REMAINDER, metavar="COMMAND")
    """the training command, after --"""

    def __post_init__(self) -> None:
        if self.knobs is not None:
            self.agent_knobs()  # refused here, before the program starts

    def agent_knobs(self) -> Knobs:
        if self.knobs is None:
            return Knobs()
        import json

        try:
            return Knobs(**json.loads(self.knobs))
        except (ValueError, TypeError):
            raise ConfigError("knobs", "must be a JSON object of inject/options.Knobs fields", got=self.knobs) from None

    @property
    def argv(self) -> list[str]:
        """The user's command line, as typed after --."""
        return list(self.command[1:] if self.command[:1] == ("--",) else self.command)
