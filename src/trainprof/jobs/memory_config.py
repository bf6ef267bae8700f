"""`trainprof memory`'s configuration: the workload it starts from (`train`), the search and
the ladder, the output; every flag of the command is one of these fields (trainprof/flags.py).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from trainprof.errors import ConfigError, UsageError
from trainprof.flags import option, section
from trainprof.options import OutputOptions
from trainprof.tune.config import ProgramTune
from trainprof.workload.config import TrainConfig

# On CPU there is no device to fill: the search runs against an emulated device of this
# size (peak RSS above the baseline), small enough that the tiny preset's search takes
# seconds on 2 cores. --memory-limit picks another size.
DEFAULT_CPU_LIMIT = "512MiB"

_UNITS = {"": 1, "b": 1, "k": 2**10, "kib": 2**10, "m": 2**20, "mib": 2**20, "g": 2**30, "gib": 2**30,
          "t": 2**40, "tib": 2**40, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)(?:e([+-]?\d+))?\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_size(text: str, flag: str = "--memory-limit") -> int:
    """'2GiB', '512MiB', '1.5GB', '800M', '3e9' → bytes. KiB/MiB/GiB and bare K/M/G are
    powers of 1024; KB/MB/GB powers of 1000; no unit means bytes. At most MAX_SIZE."""
    from decimal import Decimal

    shown = repr(text) if len(text) <= 40 else repr(text[:40] + "...")
    m = _SIZE.match(text)
    unit = m.group(3).lower() if m else ""
    if not m or unit not in _UNITS:
        raise UsageError(f"{flag} {shown}: expected a size such as 2GiB, 512MiB, 1.5GB or 3e9 (bytes)")
    # Decimal, with the exponent clamped first: 10 ** int("9999999999") is a 10-billion-digit
    # int (issue #33: it hung) and float("1e400") overflowed into a traceback
    exp = m.group(2) or "0"
    digits = exp.lstrip("+-").lstrip("0") or "0"
    e = min(int(digits), 9999) if len(digits) <= 4 else 9999
    value = Decimal(m.group(1)).scaleb(-e if exp.startswith("-") else e) * _UNITS[unit]
    if not value >= 1:
        raise UsageError(f"{flag} {shown}: must be at least 1 byte")
    if value > MAX_SIZE:
        raise UsageError(f"{flag} {shown}: more than 1 EiB; no device holds that much")
    return int(value)


MAX_SIZE = 2**60  # 1 EiB


# The TrainConfig fields a memory study starts from (flags); the ladder changes the others.
# `--steps` is per probe.
CONFIG_FIELDS = ("preset", "device", "micro_batch", "seq_len", "dtype", "attention")
SEARCH = "search and ladder"  # the --help group


@dataclass(frozen=True)
class MemoryJob:
    """`trainprof memory`'s configuration."""

    train: TrainConfig = section(TrainConfig(steps=2), flags=(*CONFIG_FIELDS, "steps"), group="workload", helps={
        "micro_batch": "sequences per forward for the breakdown and ladder (default: the preset's)",
        "steps": "training steps per measurement (the second is the first with AdamW states)"})
    """the configuration measured first (its steps: per probe)"""
    memory_limit: int | None = option(None, parse=parse_size, metavar="SIZE", group=SEARCH)
    """device capacity to search against, e.g. 2GiB, 512MiB, 1.5GB: on CPU it emulates a device (peak RSS above
    the baseline); on CUDA the allocator peak is held to it"""
    search: bool = option(True, group=SEARCH)
    """search for the largest micro-batch that fits"""
    ladder: bool = option(True, group=SEARCH)
    """climb the memory ladder after measuring the configuration"""
    output: OutputOptions = section(OutputOptions(), flags=("out", "force", "json"), group="output", helps={
        "out": "folder for memory.json (default runs/<timestamp>-memory); an existing non-empty folder is refused "
               "without --force", "json": "print memory.json to stdout instead of tables"})
    """where memory.json goes"""
    program: ProgramTune = section(ProgramTune(), group="your program (-- COMMAND)", helps={
        "warmup": "with -- COMMAND: the program's steps each measurement leaves out (≥ 3)",
        "arg_knob": "with -- COMMAND: a flag of your program and the values to measure (repeatable), e.g. "
                    "\"--batch-size=32,64,128\" or \"--checkpointing=1\": each value is a rung",
        "env_knob": "with -- COMMAND: an environment variable and the values to measure (repeatable)"})
    """how the program is measured (program mode)"""
    bf16: bool = option(True, group="your program (-- COMMAND)")
    """with -- COMMAND: also measure the program under bf16 autocast (applied from outside, as tune's knob)"""
    command: tuple[str, ...] = option((), positional=True, nargs=argparse.REMAINDER, metavar="COMMAND")
    """your training command, after --: its measured peak per phase and the memory knobs that apply to it"""

    def __post_init__(self) -> None:
        if self.memory_limit is not None and not 1 <= self.memory_limit <= MAX_SIZE:
            raise ConfigError("memory_limit", "must be from 1 byte to 1 EiB", got=self.memory_limit)
        if not self.argv and (self.program.arg_knob or self.program.env_knob or self.program.step_marker):
            raise UsageError("memory: --arg-knob, --env-knob and --step-marker measure your own program: give its "
                             "command after --")

    @property
    def argv(self) -> list[str]:
        """The user's command line, as typed after --."""
        return list(self.command[1:] if self.command[:1] == ("--",) else self.command)

    @classmethod
    def flag_default_text(cls, name: str) -> str | None:
        """--help's default of a field whose default depends on the device."""
        return f"{DEFAULT_CPU_LIMIT} on CPU, the whole GPU on CUDA" if name == "memory_limit" else None
