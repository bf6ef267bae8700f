"""The knobs `trainprof tune -- COMMAND` turns inside the user's program, declared once.

The tuner builds one `Knobs` per trial (tune/program.py) and the profile agent applies it in
the program (inject/knobs.py); it travels in the agent's options (inject/options.AgentConfig,
as JSON). A plain value type with no torch: both sides import it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from trainprof.errors import ConfigError


@dataclass(frozen=True)
class Knobs:
    """What `trainprof tune -- COMMAND` changes inside the program for one trial (inject/knobs.py
    applies it; docs/tuning.md, "Program mode"). Every field unset (None/False) changes nothing:
    `trainprof profile` never sets one, and the agent then patches nothing for them."""

    num_workers: int | None = None
    """DataLoader(num_workers=N) for every DataLoader the program constructs"""
    persistent_workers: bool | None = None
    """DataLoader(persistent_workers=...) where it has workers"""
    prefetch_factor: int | None = None
    """DataLoader(prefetch_factor=...) where it has workers"""
    pin_memory: bool | None = None
    """DataLoader(pin_memory=...)"""
    optimizer: Literal["fused", "foreach"] | None = None
    """fused=True (where the class and the device allow it, else foreach=True) or foreach=True for every
    torch.optim optimizer the program constructs"""
    autocast: Literal["bf16", "fp16"] | None = None
    """autocast around the forward of the model the optimizer trains (its root modules); fp16 only where the
    program steps through an enabled GradScaler"""
    compile: bool = False
    """torch.compile the root modules' forward"""
    threads: int | None = None
    """torch.set_num_threads(N), kept over the program's own calls"""
    gc_freeze: bool = False
    """gc.collect(); gc.freeze() after the first step and a larger generation-0 threshold"""
    tf32: bool = False
    """TF32 matmuls and convolutions (CUDA)"""
    cudnn_benchmark: bool = False
    """torch.backends.cudnn.benchmark = True (CUDA)"""

    def __post_init__(self) -> None:
        for name in ("num_workers", "prefetch_factor", "threads"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < (0 if name == "num_workers" else 1)):
                raise ConfigError(name, "must be a whole number ≥ " + ("0" if name == "num_workers" else "1"),
                                  owner="knobs", got=v)

    def set(self) -> dict[str, Any]:
        """The fields set (not None, not False), in declaration order."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None and getattr(self, f.name) is not False}

    @property
    def model(self) -> bool:
        """Whether a knob acts on the model (it needs the root modules from step 0 on)."""
        return self.autocast is not None or self.compile
