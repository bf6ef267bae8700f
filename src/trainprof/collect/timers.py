"""Split one training step's wall time into data / h2d / forward / backward / optimizer.

How the split is kept true (docs/metrics.md has the long form):

* `data` is host time spent waiting for the next batch (perf_counter): while the host waits,
  nothing new reaches the GPU, so this is idle accelerator time.
* `h2d`, `forward`, `backward`, `optimizer` are measured with backend marks: CUDA events on
  the current stream on GPU (GPU-timeline time, including launch gaps), perf_counter on CPU.
* The step ends with one `synchronize()` so the step's host wall time covers all of its GPU
  work and the events can be read. This costs the overlap of the next step's launches with
  this step's tail, the same sync any loop that logs `loss.item()` every step already pays.
* `other_s` = step time − Σ phases: host work outside any phase (logging, LR schedule).
* `pipeline`: a pipeline stage's schedule outside its own forwards and backwards (waiting for
  the previous or next stage, sends, receives: the bubble; workload/pipeline.Split). Only a
  step that entered it has `pipeline_s`; every other record stays as it was.

A phase may be entered several times per step (gradient accumulation): its times add up.

Each phase is also an NVTX range `trainprof.<phase>` (and each step `trainprof.step`), so
an Nsight Systems timeline shows the same split; without CUDA the ranges are no-ops.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Any, Iterator

from msgspec import UNSET

from trainprof.backends.base import DeviceBackend
from trainprof.recordtypes.run import StepRecord

PHASES = ("data", "h2d", "forward", "backward", "optimizer", "pipeline")
HOST_TIMED = frozenset({"data"})  # waiting on the host: nothing is queued on the device


class StepTimer:
    def __init__(self, backend: DeviceBackend) -> None:
        self.backend = backend
        self._t0: float | None = None
        self._host: dict[str, float] = {}
        self._marks: list[tuple[str, Any, Any]] = []

    @property
    def in_step(self) -> bool:
        return self._t0 is not None

    def start(self) -> None:
        if self._t0 is not None:
            raise RuntimeError("StepTimer.start() called twice without stop()")
        self._host = dict.fromkeys(PHASES, 0.0)
        self._marks = []
        self._t0 = self.backend.host_clock()

    def abort(self) -> None:
        """Forget the step in progress (its body raised)."""
        self._t0 = None

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if name not in PHASES:
            raise ValueError(f"unknown phase {name!r}; expected one of {', '.join(PHASES)}")
        if self._t0 is None:
            raise RuntimeError(f"phase {name!r} entered outside a step")
        with nvtx(self.backend, f"trainprof.{name}"):  # same names as the profiler's ranges
            if name in HOST_TIMED:
                t0 = self.backend.host_clock()
                try:
                    yield
                finally:
                    self._host[name] += self.backend.host_clock() - t0
            else:
                m0 = self.backend.mark()
                try:
                    yield
                finally:
                    self._marks.append((name, m0, self.backend.mark()))

    def stop(self, step: int, tokens: int, loss: Any = None) -> StepRecord:
        """Synchronise, read the marks, and return the step's record."""
        if self._t0 is None:
            raise RuntimeError("StepTimer.stop() without start()")
        self.backend.synchronize()
        t1 = self.backend.host_clock()
        total = t1 - self._t0
        self._t0 = None
        times = dict(self._host)
        for name, m0, m1 in self._marks:
            times[name] += self.backend.seconds_between(m0, m1)
        loss_value = _to_float(loss)
        covered = sum(times.values())
        piped = any(name == "pipeline" for name, _, _ in self._marks)
        return StepRecord(
            step=step,
            step_time_s=total,
            data_s=times["data"],
            h2d_s=times["h2d"],
            forward_s=times["forward"],
            backward_s=times["backward"],
            optimizer_s=times["optimizer"],
            # Clamp tiny negatives: GPU event and host clocks differ by microseconds.
            other_s=max(0.0, total - covered),
            tokens=int(tokens),
            loss=loss_value,
            pipeline_s=times["pipeline"] if piped else UNSET,
        )


def nvtx(backend: Any, name: str) -> Any:
    """The backend's NVTX range (Nsight Systems timelines), or nothing for a user's backend
    without one."""
    fn = getattr(backend, "nvtx_range", None)
    return fn(name) if fn is not None else nullcontext()


def _to_float(loss: Any) -> float | None:
    if loss is None:
        return None
    if hasattr(loss, "detach"):
        return float(loss.detach().float().item())  # after synchronize(): no extra stall
    return float(loss)
