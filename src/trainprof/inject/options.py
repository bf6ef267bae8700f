"""What `trainprof profile` tells its agent: the user's options and where to write.

`ProfileOptions` is the one declaration of the command's measuring knobs (the `profile`
section of jobs/profile_config.ProfileJob, whose fields are the command's flags: flags.py),
the trace and sampler ones through the `MonitorOptions` it shares with `run` (options.py); it
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
from trainprof.flags import option, section
from trainprof.knobs import Knobs
from trainprof.options import MonitorOptions

MIN_WARMUP = 2  # step 0 is the cold start (and the claim); step warmup-1 is the FLOP-counted one


@dataclass(frozen=True)
class ProfileOptions:
    """`trainprof profile`'s measuring options (one step = one optimizer.step())."""

    PATH: ClassVar[str] = "profile"
    # --help lists the Monitor's flags among profile's own, where they always were
    FLAG_ORDER: ClassVar[tuple[str, ...]] = ("warmup", "steps", "profile_steps", "with_stack", "modules", "py_spy",
                                             "stop_after", "step_marker", "tokens_per_step", "flops_per_step",
                                             "dtype", "system_interval")

    warmup: int = 2
    """steps left out before measuring (at least 2: the first is the program's cold start, the FLOPs of the
    last are counted with FlopCounterMode)"""
    steps: int = 10
    """steps measured after the warm-up: step time and its split, tokens/s, MFU"""
    monitor: MonitorOptions = section(MonitorOptions(), flat=True, helps={
        "system_interval": "sample CPU/GPU utilisation, memory and power every S seconds during the measured "
                           "steps (0: off)"})
    """the profiled steps and the system sampler (options.MonitorOptions, shared with `run`)"""
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

    def __post_init__(self) -> None:
        def bad(name: str, why: str, got: object) -> ConfigError:
            return ConfigError(name, why, owner=self.PATH, got=got)

        if self.warmup < MIN_WARMUP:
            raise bad("warmup", f"must be ≥ {MIN_WARMUP} (step 0 is the cold start; the FLOPs of the last warm-up "
                      "step are counted)", self.warmup)
        if self.steps < 1:
            raise bad("steps", "must be ≥ 1", self.steps)
        if self.monitor.profile_steps < 0:
            raise bad("profile_steps", "must be ≥ 0 (0: no trace)", self.monitor.profile_steps)
        if self.tokens_per_step is not None and self.tokens_per_step < 1:
            raise bad("tokens_per_step", "must be ≥ 1", self.tokens_per_step)
        if self.flops_per_step is not None and not self.flops_per_step > 0:
            raise bad("flops_per_step", "must be > 0", self.flops_per_step)
        if self.step_marker is not None and not _marker_ok(self.step_marker):
            raise bad("step_marker", "must be MODULE:QUALNAME (e.g. train:train_step)", self.step_marker)


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
        o = d["options"]
        options = ProfileOptions(**{**o, "monitor": MonitorOptions(**o["monitor"])})
        return cls(**{**d, "options": options, "knobs": Knobs(**d.get("knobs", {}))})
