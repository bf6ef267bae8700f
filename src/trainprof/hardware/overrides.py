"""The user's peak overrides (`--peak-tflops`, `--peak-bandwidth-gbs`, `--gpu-spec`): a flag section
that `run`, `profile` and `analyze` declare. Apart from hardware/peaks.py so that building a
command's parser does not load the spec table (TOML, name patterns: ~13 ms of `analyze --help`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from trainprof.errors import ConfigError


@dataclass(frozen=True)
class PeakOverrides:
    """The user's peaks, shared by `trainprof run`, `profile` and `analyze` (flags from these fields)."""

    PATH: ClassVar[str] = "peaks"

    peak_tflops: float | None = None
    """dense peak TFLOP/s for every dtype, instead of the spec table's (MFU/HFU, roofline)"""
    peak_bandwidth_gbs: float | None = None
    """peak memory bandwidth in GB/s, instead of the spec table's"""
    gpu_spec: str | None = None
    """spec-table row to use (see `trainprof specs`) for a GPU whose name is not listed"""

    def __post_init__(self) -> None:
        for name in ("peak_tflops", "peak_bandwidth_gbs"):
            v = getattr(self, name)
            if v is not None and not 0 < v < math.inf:
                raise ConfigError(name, "must be a finite number > 0", owner=self.PATH, got=v)
