"""The two benchmarks that train the reference workload (issue #41): `bench batch`, tokens/s per
micro-batch up to the memory limit, and `bench scaling`, tokens/s on 1, 2, 4 ... ranks. Each
holds the workload's own `TrainConfig` as a section (its flags are the fields named below, as
`trainprof run` spells them); jobs/bench_batch.py and jobs/bench_scaling.py run them, each
configuration a fresh `trainprof run` process.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from trainprof.bench.config import _Config, _show_list, _show_sizes
from trainprof.bench.parse import parse_bytes, parse_ints
from trainprof.flags import option, section
from trainprof.workload.config import TrainConfig

# The workload's flags both benchmarks take; the device is bench's --device, the micro-batch the
# sweep's own (batch) or the same on every rank count (scaling).
_WORKLOAD = ("preset", "seq_len", "dtype", "attention", "optimizer", "compile", "activation_checkpointing", "threads",
             "data", "steps", "warmup_steps", "seed")
_HELPS = {"steps": "optimizer steps per configuration", "warmup_steps": "of them, left out of its timing"}


def _budget(text: str, flag: str) -> int:
    return parse_bytes(text, flag)


def _nproc(text: str, flag: str) -> tuple[int, ...]:
    return parse_ints(text, flag, minimum=1)


@dataclass(frozen=True)
class BatchSweepConfig(_Config):
    PATH: ClassVar[str] = "bench.batch"
    DEFAULTS: ClassVar[dict[str, dict[str, Any]]] = {"cpu": {"max_micro_batch": 256}, "cuda": {"max_micro_batch": 4096}}

    train: TrainConfig = section(TrainConfig(steps=8, warmup_steps=3, eval_batches=0), flags=_WORKLOAD, helps=_HELPS)
    """the workload swept (its micro-batch is the sweep's)"""
    min_micro_batch: int = option(1, metavar="B")
    """the first micro-batch; then powers of two times it"""
    max_micro_batch: int | None = option(None, metavar="B")
    """the last micro-batch tried, at most"""
    memory_budget: int | None = option(None, parse=_budget, show=lambda n: _show_sizes((n,)), metavar="SIZE")
    """CPU: the memory a micro-batch may use by the planner's estimate (`trainprof plan`), e.g. 4G (default:
    half of the memory available now); a GPU stops at the first out-of-memory instead"""
    timeout_s: float = option(900.0, flag="--timeout", metavar="S")
    """seconds one micro-batch's run may take"""

    def __post_init__(self) -> None:
        self._positive("min_micro_batch", "max_micro_batch", "memory_budget", "timeout_s")
        if self.max_micro_batch is not None and self.max_micro_batch < self.min_micro_batch:
            self._fail("max_micro_batch", f"must be ≥ --min-micro-batch {self.min_micro_batch}, "
                       f"got {self.max_micro_batch}")
        if self.train.warmup_steps >= self.train.steps:
            self._fail("train", f"--warmup-steps {self.train.warmup_steps} leaves no measured step of "
                       f"--steps {self.train.steps}")

    def resolved(self, kind: str) -> "BatchSweepConfig":
        c = self._fill(kind)
        if c.max_micro_batch < c.min_micro_batch:
            c = replace(c, max_micro_batch=c.min_micro_batch)
        return c

    def sizes(self) -> list[int]:
        """min, 2·min, 4·min ... ≤ max."""
        out, b = [], self.min_micro_batch
        while b <= (self.max_micro_batch or b):
            out.append(b)
            b *= 2
        return out


@dataclass(frozen=True)
class ScalingConfig(_Config):
    PATH: ClassVar[str] = "bench.scaling"

    nproc: tuple[int, ...] = option((1, 2), parse=_nproc, show=_show_list, metavar="1,2,4")
    """rank counts, comma-separated (1 is always measured: efficiency is against one rank); each runs
    `trainprof run --nproc N` (torchrun; gloo on CPU, NCCL on GPUs)"""
    train: TrainConfig = section(TrainConfig(steps=8, warmup_steps=3, eval_batches=0),
                                 flags=(*_WORKLOAD, "micro_batch", "grad_accum", "strategy"),
                                 helps={**_HELPS, "micro_batch": "sequences per forward/backward on each rank "
                                        "(the same at every rank count: weak scaling)"})
    """the workload on each rank"""
    profile_steps: int = option(2, metavar="N")
    """steps after the measured ones recorded with torch.profiler on every rank: the collectives' share"""
    timeout_s: float = option(900.0, flag="--timeout", metavar="S")
    """seconds one rank count's job may take"""

    def __post_init__(self) -> None:
        self._positive("profile_steps", "timeout_s")
        if self.train.warmup_steps >= self.train.steps:
            self._fail("train", f"--warmup-steps {self.train.warmup_steps} leaves no measured step of "
                       f"--steps {self.train.steps}")

    def resolved(self, kind: str) -> "ScalingConfig":
        return replace(self, nproc=tuple(sorted({1, *self.nproc})))


# `trainprof bench KIND` → its configuration, for the kinds that train (bench/config.KINDS: the others)
TRAINS: dict[str, type] = {"batch": BatchSweepConfig, "scaling": ScalingConfig}


def all_kinds() -> dict[str, type]:
    from trainprof.bench.config import KINDS

    return {**KINDS, **TRAINS}
