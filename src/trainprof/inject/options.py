"""What `trainprof profile` tells its agent: the user's options and where to write.

`ProfileOptions` is the one declaration of the command's measuring knobs (the `profile`
section of jobs/profile.ProfileJob, whose fields are the command's flags: flags.py); it
validates itself on construction; `AgentConfig` adds what the parent decided (the staging
folder, the peaks, the environment to restore, a tune trial's knobs) and travels as JSON in one environment
variable (`inject.ENV`), the only channel that reaches every rank of a torchrun job.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from trainprof.errors import ConfigError
from trainprof.flags import option
from trainprof.knobs import Knobs

MIN_WARMUP = 2  # step 0 is the cold start (and the claim); step warmup-1 is the FLOP-counted one
MAX_SYSTEM_INTERVAL_S = 86400.0  # a day: an interval longer than the run takes no sample anyway


@dataclass(frozen=True)
class ProfileOptions:
    """`trainprof profile`'s measuring options (one step = one optimizer.step())."""

    PATH: ClassVar[str] = "profile"

    warmup: int = 2
    """steps left out before measuring (at least 2: the first is the program's cold start, the FLOPs of the
    last are counted with FlopCounterMode)"""
    steps: int = 10
    """steps measured after the warm-up: step time and its split, tokens/s, MFU"""
    profile_steps: int = 2
    """steps recorded with torch.profiler after the measured ones (2 more start it up); 0: no trace"""
    with_stack: bool = False
    """record Python call sites in the trace"""
    modules: str | None = option(None, metavar="PATTERN")
    """per-module ranges in the trace only for the modules whose class or Class_N label matches this RE2
    pattern (default: every module; every op is still recorded)"""
    py_spy: bool = False
    """sample the program's Python stacks with py-spy over the profiled steps (DIR/trace.py_spy.txt)"""
    stop_after: bool = False
    """stop the program (exit code 0) once the window is recorded; default: let it run to its end"""
    step_marker: str | None = option(None, metavar="MODULE:QUALNAME")
    """MODULE:QUALNAME of the function that runs one training step, for a program that never calls
    optimizer.step() (e.g. train:train_step)"""
    tokens_per_step: int | None = None
    """tokens (or samples) per step on each rank; default: counted from the first forward's input of each
    micro-batch"""
    flops_per_step: float | None = None
    """model FLOPs per step on each rank; default: counted with FlopCounterMode on one real step"""
    dtype: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    """compute dtype whose peak MFU is measured against; auto: autocast's at the first forward, else the
    parameters'"""
    system_interval: float = option(0.5, metavar="S")
    """sample CPU/GPU utilisation, memory and power every S seconds during the measured steps (0: off)"""

    def __post_init__(self) -> None:
        def bad(name: str, why: str) -> ConfigError:
            return ConfigError(name, why, owner=self.PATH, got=getattr(self, name))

        if self.warmup < MIN_WARMUP:
            raise bad("warmup", f"must be ≥ {MIN_WARMUP} (step 0 is the cold start; the FLOPs of the last warm-up "
                      "step are counted)")
        if self.steps < 1:
            raise bad("steps", "must be ≥ 1")
        if self.profile_steps < 0:
            raise bad("profile_steps", "must be ≥ 0 (0: no trace)")
        if self.tokens_per_step is not None and self.tokens_per_step < 1:
            raise bad("tokens_per_step", "must be ≥ 1")
        if self.flops_per_step is not None and not self.flops_per_step > 0:
            raise bad("flops_per_step", "must be > 0")
        if not 0 <= self.system_interval <= MAX_SYSTEM_INTERVAL_S:  # 1e20 overflowed Event.wait in the sampler (#45)
            raise bad("system_interval", f"must be from 0 (sampling off) to {MAX_SYSTEM_INTERVAL_S:g} s")
        if self.modules is not None:
            from trainprof.userregex import compile_user

            compile_user(self.modules, "--modules")  # a pattern RE2 refuses: one line now, not in the program
        if self.step_marker is not None and not _marker_ok(self.step_marker):
            raise bad("step_marker", "must be MODULE:QUALNAME (e.g. train:train_step)")


def _marker_ok(marker: str) -> bool:
    mod, sep, qual = marker.partition(":")
    parts = [*mod.split("."), *qual.split(".")]
    return bool(sep) and all(p.isidentifier() for p in parts)


@dataclass(frozen=True)
class AgentConfig:
    """Everything the agent reads from `inject.ENV`."""

    options: ProfileOptions
    parts: str
    """absolute path of the folder where each rank writes its records (inject.PARTS of the staging folder)"""
    package_dir: str
    """the parent's trainprof package, loaded into the program by the bootstrap"""
    peaks: dict[str, Any] = field(default_factory=dict)
    """PeakOverrides fields (--peak-tflops, --peak-bandwidth-gbs, --gpu-spec)"""
    pythonpath: str | None = None
    """the program's own PYTHONPATH (None: it had none), put back when a rank is claimed"""
    parent_pid: int = 0
    """`trainprof profile`'s pid: its direct child reports at exit even when it never trained"""
    knobs: Knobs = field(default_factory=Knobs)
    """what `trainprof tune -- COMMAND` changes in the program for one trial (none: `trainprof profile`)"""

    def to_env(self) -> str:
        d = dataclasses.asdict(self)
        if not self.knobs.set():
            del d["knobs"]  # `trainprof profile`'s configuration, exactly as before knobs existed
        return json.dumps(d)

    @classmethod
    def from_env(cls, text: str) -> "AgentConfig":
        d = json.loads(text)
        return cls(**{**d, "options": ProfileOptions(**d["options"]), "knobs": Knobs(**d.get("knobs", {}))})
