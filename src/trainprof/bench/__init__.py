"""Micro-benchmarks of the machine: matmul, bandwidth, collectives, data loader, GEMM shapes;
and two that train the reference workload (batch, scaling: jobs/bench_batch.py, bench_scaling.py).

One module per benchmark, each `run(cfg, backend|device, progress) -> dict` with the
"results" rows and the kind's summary; result.py wraps that in the bench.json envelope.
Nothing here runs at import (no device is touched until a benchmark starts).
"""

from __future__ import annotations

from typing import Callable

KINDS = ("matmul", "bandwidth", "allreduce", "dataloader", "shapes", "batch", "scaling")

Progress = Callable[[int, int, str], None]
"""progress(done, total, what_runs_now): called before each case of a benchmark"""

__all__ = ["KINDS", "Progress"]
