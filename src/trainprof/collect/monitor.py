"""`trainprof.Monitor`: the same measurements as `trainprof run`, around any training loop.

    mon = trainprof.Monitor(device="cuda", dtype="bf16", tokens_per_step=B * T)
    mon.count_flops(model, (x, y))            # once; or Monitor(flops_per_step=...)
    for step in range(n):
        with mon.step() as s:
            with s.phase("data"):      x, y = next(it)
            with s.phase("h2d"):       x, y = x.to(dev), y.to(dev)
            with s.phase("forward"):   loss = model(x, y)
            with s.phase("backward"):  loss.backward()
            with s.phase("optimizer"): opt.step(); opt.zero_grad()
            s.loss = loss              # read after the step's sync: no extra stall
    print(mon.summary())

Overhead: two marks per phase and one synchronize per step (see collect/timers.py and
benchmarks/monitor_overhead.py for the measured cost).

System metrics: `Monitor(..., system_interval_s=0.5)` samples CPU, memory, IO and (on
CUDA) GPU utilisation, clocks, memory and power in a background thread from the first
step until `record()`/`stop_system()`; `record()` carries them (and the energy per step
and per token of the measured steps) under "system". Pass `sampler=` for your own sensors.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import msgspec

from trainprof import atomic
from trainprof.analysis.run.throughput import default_warmup, summarise
from trainprof.backends import DeviceBackend, get_backend, resolve_device
from trainprof.collect.device_info import resolve_device_info
from trainprof.hardware.overrides import PeakOverrides
from trainprof.collect.sampler import SystemSampler
from trainprof.collect.timers import StepTimer, nvtx
from trainprof.recordtypes.run import DeviceInfo, RunRecord, StepRecord, Summary
from trainprof.recordtypes.system import System


class _StepHandle:
    def __init__(self, timer: StepTimer) -> None:
        self._timer = timer
        self.loss: Any = None
        self.tokens: int | None = None

    def phase(self, name: str):  # noqa: ANN201 - a context manager
        return self._timer.phase(name)


class Monitor:
    def __init__(
        self,
        device: str | DeviceBackend = "auto",
        *,
        dtype: str = "fp32",
        tokens_per_step: int | None = None,
        flops_per_step: float | None = None,
        hardware_flops_per_step: float | None = None,
        peak_tflops: float | None = None,
        peak_bandwidth_gbs: float | None = None,
        gpu_spec: str | None = None,
        warmup_steps: int = 1,
        on_step: Callable[[StepRecord], None] | None = None,
        system_interval_s: float | None = None,
        sampler: SystemSampler | None = None,
        measure_cpu_peak: bool = True,
    ) -> None:
        self.backend = get_backend(resolve_device(device)) if isinstance(device, str) else device
        self.dtype = dtype
        self.tokens_per_step = tokens_per_step
        self.flops_per_step = flops_per_step
        self.hardware_flops_per_step = hardware_flops_per_step
        self.warmup_steps = warmup_steps
        self.on_step = on_step
        self.warnings: list[str] = []
        self.device_info: DeviceInfo = resolve_device_info(
            self.backend, dtype, PeakOverrides(peak_tflops, peak_bandwidth_gbs, gpu_spec),
            measure_cpu_peak=measure_cpu_peak, warnings=self.warnings,
        )
        self._timer = StepTimer(self.backend)
        self._steps: list[StepRecord] = []
        self.backend.reset_peak_memory()
        if sampler is None and system_interval_s:
            from trainprof.backends.sensors import default_sensors

            sampler = SystemSampler(default_sensors(self.backend.kind), system_interval_s)
        self.sampler = sampler
        self._spans: dict[int, tuple[float, float]] = {}  # step → (start, end) on the sampler's clock

    # ---- FLOPs -------------------------------------------------------------------
    def count_flops(self, model: Any, batch: Any, loss_fn: Callable[..., Any] | None = None,
                    micro_batches: int = 1) -> int:
        """Count one step's FLOPs with FlopCounterMode on `model` and `batch` (one extra
        forward+backward, gradients restored); `micro_batches` scales for accumulation."""
        from trainprof.collect.flops import count_train_step_flops

        self.flops_per_step = count_train_step_flops(model, batch, loss_fn) * micro_batches
        return int(self.flops_per_step)

    # ---- steps -------------------------------------------------------------------
    @contextmanager
    def step(self, tokens: int | None = None) -> Iterator[_StepHandle]:
        handle = _StepHandle(self._timer)
        sampler = self.sampler
        if sampler is not None and sampler.t0 is None:
            sampler.start()  # the first sample brackets the first step
        t_start = sampler.clock() if sampler is not None else 0.0
        self._timer.start()
        try:
            with nvtx(self.backend, "trainprof.step"):
                yield handle
        except BaseException:
            self._timer.abort()
            raise
        n = handle.tokens if handle.tokens is not None else tokens
        n = n if n is not None else self.tokens_per_step
        if n is None:
            self._timer.abort()
            raise ValueError("Monitor needs tokens: pass tokens_per_step=, step(tokens=) or set s.tokens")
        rec = self._timer.stop(len(self._steps), n, handle.loss)
        if sampler is not None:
            self._spans[rec.step] = (t_start, sampler.clock())
        self._steps.append(rec)
        if self.on_step is not None:
            self.on_step(rec)

    def add(self, rec: StepRecord, span: tuple[float, float] | None = None) -> None:
        """A step timed outside `step()` (`trainprof profile` times steps from hooks); `span`:
        its (start, end) on the sampler's clock, for the energy of the measured steps."""
        if span is not None:
            self._spans[rec.step] = span
        self._steps.append(rec)
        if self.on_step is not None:
            self.on_step(rec)

    def extend(self, records: list[StepRecord]) -> None:
        """Steps measured before (a resumed run): they count in the summary and numbering."""
        self._steps.extend(records)

    @property
    def steps(self) -> list[StepRecord]:
        return list(self._steps)

    # ---- results -----------------------------------------------------------------
    def summary(self, val_loss: float | None = None) -> Summary:
        if self.flops_per_step is None:
            raise ValueError("Monitor has no FLOPs: pass flops_per_step= or call count_flops()")
        peak_mem, mem_kind = self.backend.peak_memory_bytes()
        return summarise(
            self._steps,
            flops_per_step=self.flops_per_step,
            hardware_flops_per_step=self.hardware_flops_per_step,
            peak_tflops=self.device_info.peak_tflops,
            warmup_steps=default_warmup(len(self._steps), self.warmup_steps),
            peak_memory_bytes=peak_mem,
            peak_memory_kind=mem_kind,
            val_loss=val_loss,
        )

    def stop_system(self) -> None:
        """Stop the sampler thread (taking a last sample); `record()` calls it."""
        if self.sampler is not None:
            self.sampler.stop()

    def system(self, tokens_scale: int = 1) -> System | None:
        """The "system" block: samples, their summary, and energy over the measured steps
        (those left after warm-up). `tokens_scale`: ranks whose tokens the sampled GPUs
        processed (a node's local world size)."""
        if self.sampler is None or self.sampler.t0 is None:
            return None
        from trainprof.analysis.run.system import summarise_system

        self.stop_system()
        warm = default_warmup(len(self._steps), self.warmup_steps)
        measured = [r for r in self._steps[warm:] if r.step in self._spans]
        window = None
        if measured:
            window = (self.sampler.relative(self._spans[measured[0].step][0]),
                      self.sampler.relative(self._spans[measured[-1].step][1]))
        return msgspec.convert(summarise_system(
            self.sampler.samples, interval_s=self.sampler.interval_s, window=window,
            steps=len(measured), tokens=sum(r.tokens for r in measured) * tokens_scale,
            unavailable=self.sampler.unavailable, errors=self.sampler.errors), System)

    def record(self, *, model: dict[str, Any] | None = None, config: dict[str, Any] | None = None,
               val_loss: float | None = None, flops: dict[str, Any] | None = None,
               environment: dict[str, Any] | None = None, world_size: int = 1,
               tokens_scale: int = 1) -> RunRecord:
        return RunRecord(
            device=self.device_info,
            model=model or {},
            config=config or {},
            steps=self.steps,
            summary=self.summary(val_loss),
            world_size=world_size,
            flops=flops or {},
            environment=environment or {},
            warnings=list(self.warnings),
            system=self.system(tokens_scale),
            memory_snapshot=None,  # run --memory-snapshot sets it (jobs/run.py)
        )

    def save(self, path: str, **record_kwargs: Any) -> RunRecord:
        """Write run.json atomically (temp file + rename), diagnosed from the record alone: its
        findings and the flowchart's path, as `trainprof run` stores them (a report of it used
        to recompute the path, and its findings were empty). This runs inside the user's program
        (the HF and Lightning callbacks save at the end of training): a diagnosis that fails
        leaves the record undiagnosed with a warning saying why, and their training ends as it
        would without trainprof."""
        from trainprof.diagnose import engine

        rec = self.record(**record_kwargs)
        try:
            rec = engine.diagnose_run(rec)
        except Exception as e:  # noqa: BLE001 - a bug of ours must not end the user's run (the warning names it)
            rec = msgspec.structs.replace(rec, warnings=[*rec.warnings, f"not diagnosed: {type(e).__name__}: {e}"])
        atomic.write_text(path, rec.to_json())
        return rec
