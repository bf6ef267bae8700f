"""The measurements of one profiled rank, from the FLOP-counted step to its records.

The agent (agent.py) decides when; this holds what: the FLOP counter running over one real
step, the Monitor (device record and peak, peak memory, system sampler, the summary), the
clock of the step being measured (clock.py), torch.profiler over the profiled steps, and the
part file the parent turns into the run folder (jobs/profile_records.py). A part is written
once, atomically: when the window ends, or at exit if the program ends (or crashes) first.
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Any

from trainprof import atomic, jsontext
from trainprof.collect.profiler import WAIT, WARMUP
from trainprof.inject.clock import StepClock
from trainprof.inject.detect import batch_items
from trainprof.inject.options import AgentConfig

ATTENTION = "full score matrix; attention backward = 2x forward (collect/flops.py)"


class Window:
    def __init__(self, cfg: AgentConfig, rank: int) -> None:
        self.cfg, self.opts, self.rank = cfg, cfg.options, rank
        self.parts = Path(cfg.parts)
        self.warnings: list[str] = []
        self.backend: Any = None
        self.mon: Any = None
        self.clock: StepClock | None = None
        self.span_t0 = 0.0
        self.counter: Any = None
        self.flops: dict[str, Any] = {}
        self.unit: str | None = None
        self.batch_shape: list[int] | None = None
        self.backward_passes: list[int] = []
        self.micro_batches: list[int] = []
        self.prof_cm: Any = None
        self.prof: Any = None
        self.prof_calls = 0
        self.prof_t0 = 0.0
        self.prof_times: list[float] = []
        self.trace: Path | None = None

    # ---- the FLOP-counted step ------------------------------------------------------------
    def start_flops(self) -> None:
        if self.opts.flops_per_step is not None:
            return
        from trainprof.collect.flops import flop_counter

        self.counter = flop_counter()
        self.counter.__enter__()

    def stop_flops(self, step: int) -> None:
        if self.opts.flops_per_step is not None:
            self.flops = {"method": "--flops-per-step", "model_flops_per_step": self.opts.flops_per_step}
            return
        from trainprof.collect.flops import counted

        counter, self.counter = self.counter, None
        counter.__exit__(None, None, None)
        total, per_op = counted(counter)
        self.flops = {"method": f"FlopCounterMode on one real step (step {step})", "counted_step": step,
                      "model_flops_per_step": total, "hardware_flops_per_step": total,
                      "attention_convention": ATTENTION, "per_op_per_step": per_op}
        if total == 0:
            self.warnings.append(f"FlopCounterMode counted 0 FLOPs on step {step} (torch.compile'd or custom kernels "
                                 "are invisible to it): no TFLOPS or MFU; pass --flops-per-step")

    # ---- the measured steps ---------------------------------------------------------------
    def start_measuring(self, device: Any, dtype: str) -> bool:
        """The Monitor for `device` (its peak resolved now: on CPU a measured matmul peak, cached
        per machine); False when trainprof cannot time this kind of device."""
        from trainprof.collect.monitor import Monitor
        from trainprof.integrations._common import backend_for

        self.backend = backend_for(device, self.warnings)
        if self.backend is None:
            return False
        p = self.cfg.peaks
        # one sampler per machine, as `run` does: local rank 0's sees every GPU and the whole host
        first_local = os.environ.get("LOCAL_RANK", "0") == "0"
        flops = self.opts.flops_per_step if self.opts.flops_per_step is not None else self.flops["model_flops_per_step"]
        self.mon = Monitor(self.backend, dtype=dtype, flops_per_step=float(flops), warmup_steps=0,
                           peak_tflops=p.get("peak_tflops"), peak_bandwidth_gbs=p.get("peak_bandwidth_gbs"),
                           gpu_spec=p.get("gpu_spec"),
                           system_interval_s=(self.opts.system_interval or None) if first_local else None)
        self.warnings += self.mon.warnings
        if self.backend.kind == "cpu" and self.opts.profile_steps:
            from trainprof.backends.cpu import measured_bandwidth_gbs

            measured_bandwidth_gbs()  # now, while this process holds the CPU: the roofline reads the cache
        if self.mon.sampler is not None:
            self.mon.sampler.start()
        return True

    def count(self, args: tuple, kwargs: dict) -> int:
        got = batch_items(args, kwargs)
        if got is None:
            return 0
        n, unit = got
        if self.unit is None:
            t = kwargs.get("input_ids") if "input_ids" in kwargs else None
            self.unit = unit
            self.batch_shape = _shape(t if t is not None else (args, kwargs))
        return n

    def begin_step(self) -> None:
        sampler = self.mon.sampler
        self.span_t0 = sampler.clock() if sampler is not None else 0.0
        self.clock = StepClock(self.backend)

    def finish_step(self, step: int) -> None:
        clock, self.clock = self.clock, None
        rec = clock.finish(step, self.opts.tokens_per_step)
        sampler = self.mon.sampler
        self.mon.add(rec, (self.span_t0, sampler.clock()) if sampler is not None else None)
        self.backward_passes.append(clock.backward_passes)
        self.micro_batches.append(clock.micro_batches)

    # ---- the profiled steps -----------------------------------------------------------------
    def start_profiler(self, first_step: int) -> None:
        """`first_step`: the program's number of the step about to run (its ProfilerStep#N)."""
        from trainprof.collect.profiler import ProfileConfig, StepProfiler

        self.trace = self.parts / f"rank{self.rank}.trace.part.json.gz"
        cfg = ProfileConfig(active=self.opts.profile_steps, with_stack=self.opts.with_stack)
        self.prof_cm = StepProfiler(cfg, self.backend.kind, self.trace, first_step).running()
        self.prof = self.prof_cm.__enter__()
        self.prof_t0 = self.backend.host_clock()

    def profiled_step_done(self) -> bool:
        """After each profiled step; True once the trace is written."""
        self.backend.synchronize()
        if self.prof_calls >= WAIT + WARMUP:  # a recorded step: its time shows the profiler's cost
            self.prof_times.append(self.backend.host_clock() - self.prof_t0)
        self.prof.step()
        self.prof_calls += 1
        if self.prof_calls < self.prof.cfg.total_steps:
            self.prof_t0 = self.backend.host_clock()
            return False
        cm, self.prof_cm, self.prof = self.prof_cm, None, None
        cm.__exit__(None, None, None)
        os.replace(self.trace, self.parts / f"rank{self.rank}.trace.json.gz")  # complete: the parent may take it
        return True

    def abort(self) -> None:
        """The program ends inside the window: drop what cannot be finished (no partial trace)."""
        self.clock = None
        if self.counter is not None:
            counter, self.counter = self.counter, None
            try:
                counter.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - another mode on top: nothing more to undo
                pass
        if self.prof is not None:
            cm, prof = self.prof_cm, self.prof._prof
            self.prof_cm = self.prof = None
            if prof is not None:
                prof.on_trace_ready = None  # stop without writing a trace of half a window
            cm.__exit__(None, None, None)

    # ---- the part file ------------------------------------------------------------------------
    def write(self, profile: dict[str, Any], extra: dict[str, Any]) -> None:
        """rank{R}.json: the run record of the measured steps (None when there are none) and
        the profile block; written last, so a complete trace is already beside it."""
        record = None
        if self.mon is not None and self.mon.steps:
            record = self.mon.record(**extra, flops=self.flops).to_dict()
        elif self.mon is not None:
            self.mon.stop_system()
        profile = {**profile, "warnings": self.warnings, **self._window_stats()}
        atomic.write_text(self.parts / f"rank{self.rank}.json",
                          jsontext.dumps({"rank": self.rank, "record": record, "profile": profile}))

    def _window_stats(self) -> dict[str, Any]:
        measured = self.mon.steps if self.mon is not None else []
        out: dict[str, Any] = {
            "batch_unit": self.unit or ("tokens" if self.opts.tokens_per_step else None),
            "batch_shape": self.batch_shape,
            "backward_passes_per_step": _median(self.backward_passes),
            "micro_batches_per_step": _median(self.micro_batches),
            "profiled_step_time_s": self.prof_times,
            "profiler_overhead_pct": None,
        }
        if self.prof_times and measured:
            base = statistics.median(r.step_time_s for r in measured)
            if base > 0:
                out["profiler_overhead_pct"] = 100.0 * (statistics.median(self.prof_times) / base - 1.0)
        return out


def _median(xs: list[int]) -> int | None:
    return int(statistics.median_low(xs)) if xs else None


def _shape(x: Any) -> list[int] | None:
    from trainprof.integrations._common import first_tensor

    t = first_tensor(x) if not hasattr(x, "shape") else x
    return list(t.shape) if t is not None else None
