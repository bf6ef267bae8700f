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
        self.costs: dict[str, float] = {}
        self.memory_at: list[dict[str, int]] = []  # per measured step: memory at its boundaries (clock.py)
        self.counts: list[dict[str, Any]] = []  # the FLOP-counted steps: step, flops, parts, seconds
        self.flop_t0 = 0.0
        self.layout: str | None = None  # "LSTM.batch_first=False": inputs are (sequence, batch, ...)  # what trainprof's own work inside the window cost, in seconds

    # ---- the FLOP-counted step ------------------------------------------------------------
    def start_flops(self) -> None:
        if self.opts.flops_per_step is not None:
            return
        from trainprof.collect.flops import training_flop_counter

        self.counter = training_flop_counter()
        self.counter.__enter__()
        self.flop_t0 = self.backend.host_clock() if self.backend is not None else _now()

    def stop_flops(self, step: int) -> None:
        """End a FLOP-counted step. The first (step W-1) sets the count the Monitor starts with;
        the second (the step after the measured ones) checks it: a count that differs between
        two real steps says the step's work varies, and MFU then uses their mean, with a warning."""
        if self.opts.flops_per_step is not None:
            self.flops = {"method": "--flops-per-step", "model_flops_per_step": self.opts.flops_per_step}
            return
        from trainprof.collect.flops import counted

        counter, self.counter = self.counter, None
        counter.__exit__(None, None, None)
        if self.backend is not None:
            self.backend.synchronize()
        clock = self.backend.host_clock() if self.backend is not None else _now()
        total, per_op = counted(counter)
        parts = dict(getattr(counter, "parts", None) or {"forward": total, "backward": 0, "recompute": 0,
                                                          "excluded": 0})
        self.counts.append({"step": step, "flops": total, "parts": parts, "seconds": clock - self.flop_t0})
        self.flops = flop_block(self.counts, per_op, self.warnings)
        if self.mon is not None:  # the check changed the count the summary divides by
            self.mon.flops_per_step = float(self.flops["model_flops_per_step"])
            self.mon.hardware_flops_per_step = float(self.flops["hardware_flops_per_step"])

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
        measure = self.backend.kind == "cpu" and p.get("peak_tflops") is None
        traced = self.opts.monitor.profile_steps
        if measure or (self.backend.kind == "cpu" and traced and p.get("peak_bandwidth_gbs") is None):
            measure = self._peaks_elsewhere(dtype, bandwidth=bool(traced)) and measure
        # one sampler per machine, as `run` does: local rank 0's sees every GPU and the whole host
        first_local = os.environ.get("LOCAL_RANK", "0") == "0"
        flops = self.opts.flops_per_step if self.opts.flops_per_step is not None else self.flops["model_flops_per_step"]
        hardware = self.flops.get("hardware_flops_per_step")
        self.mon = Monitor(self.backend, dtype=dtype, flops_per_step=float(flops), warmup_steps=0,
                           hardware_flops_per_step=float(hardware) if hardware is not None else None,
                           peak_tflops=p.get("peak_tflops"), peak_bandwidth_gbs=p.get("peak_bandwidth_gbs"),
                           gpu_spec=p.get("gpu_spec"), measure_cpu_peak=measure,
                           system_interval_s=self.opts.monitor.sampling_s if first_local else None)
        self.warnings += self.mon.warnings
        if self.mon.sampler is not None:
            self.mon.sampler.start()
        return True

    def _peaks_elsewhere(self, dtype: str, bandwidth: bool) -> bool:
        """The CPU's matmul (and, for the roofline, copy) peaks measured in a child process with
        the program's thread count: no draw from its random streams, no 256 MiB buffers in its
        memory (backends/cpu_elsewhere.py). False (with a warning) when that failed."""
        import torch

        from trainprof.backends.cpu_elsewhere import prefetch
        from trainprof.hardware import peak_dtype_for

        t0 = self.backend.host_clock()
        why = prefetch(tuple(dict.fromkeys((peak_dtype_for(dtype, tf32_matmul=False), "fp32"))), bandwidth,
                       torch.get_num_threads())
        self.costs["peak_check_s"] = self.backend.host_clock() - t0
        if why is not None:
            from trainprof.controls import one_line

            self.warnings.append(f"the CPU peak could not be measured in a separate process ({one_line(why)}): "
                                 "no MFU/HFU (pass --peak-tflops); nothing was measured inside the program")
            return False
        return True

    def count(self, args: tuple, kwargs: dict) -> int:
        got = batch_items(args, kwargs, 1 if self.layout else 0)
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
        self.memory_at.append(clock.memory_at())

    # ---- the profiled steps -----------------------------------------------------------------
    def start_profiler(self, first_step: int) -> None:
        """`first_step`: the program's number of the step about to run (its ProfilerStep#N)."""
        from trainprof.collect.profiler import ProfileConfig, StepProfiler

        self.trace = self.parts / f"rank{self.rank}.trace.part.json.gz"
        cfg = ProfileConfig.of(self.opts.monitor)
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
        t0 = self.backend.host_clock()
        cm.__exit__(None, None, None)  # the trace is exported here: the program waits for it
        self.costs["trace_write_s"] = self.backend.host_clock() - t0
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
        base = statistics.median(r.step_time_s for r in measured) if measured else None
        if self.prof_times and base:
            # one pair of medians, shown as they are beside the percentage (issue #37: a report printed
            # -23% beside "161.3 ms under the profiler vs 145.0 ms", two figures from other fields)
            out["profiled_step_median_s"] = statistics.median(self.prof_times)
            out["measured_step_median_s"] = base
            out["profiler_overhead_pct"] = 100.0 * (out["profiled_step_median_s"] / base - 1.0)
        out["window_costs"] = window_costs(self.costs, self.counts, base)
        out["memory_by_phase"] = memory_by_phase(self.memory_at, self.backend)
        return out


def flop_block(counts: list[dict[str, Any]], per_op: dict[str, int], warnings: list[str]) -> dict[str, Any]:
    """run.json's "flops" from the counted steps: model FLOPs = forward + backward of the training
    work; hardware FLOPs add activation checkpointing's recomputation (MFU vs HFU); work without
    gradients (evaluation, generation) is left out and stated. Two counts that differ by more
    than CHECK_TOLERANCE are averaged, with a warning naming both."""
    model = [c["parts"]["forward"] + c["parts"]["backward"] for c in counts]
    hardware = [m + c["parts"]["recompute"] for m, c in zip(model, counts)]
    first = counts[0]
    block: dict[str, Any] = {
        "method": f"FlopCounterMode on real steps ({', '.join(str(c['step']) for c in counts)}), training work only",
        "counted_step": first["step"], "counted_steps": [c["step"] for c in counts],
        "model_flops_per_step": statistics.fmean(model), "hardware_flops_per_step": statistics.fmean(hardware),
        "counts_per_step": model, "parts_per_step": first["parts"],
        "attention_convention": ATTENTION, "per_op_per_step": per_op}
    if len(model) > 1 and max(model) > 0 and (max(model) - min(model)) > CHECK_TOLERANCE * max(model):
        warnings.append(f"the FLOPs of step {counts[0]['step']} ({model[0]:.4g}) and step {counts[1]['step']} "
                        f"({model[1]:.4g}) differ by {100 * (max(model) - min(model)) / max(model):.1f}%: the steps' "
                        "work varies (sequence lengths, a periodic extra pass); MFU uses their mean")
    if len(counts) == 1 and model[0] == 0:
        warnings.append(f"FlopCounterMode counted 0 FLOPs on step {first['step']} (torch.compile'd or custom kernels "
                        "are invisible to it): no TFLOPS or MFU; pass --flops-per-step")
    return block


CHECK_TOLERANCE = 0.01  # two counted steps within 1% are the same work (rounding of variable shapes aside)


def window_costs(costs: dict[str, float], counts: list[dict[str, Any]], base: float | None) -> dict[str, Any]:
    """What trainprof's own work held the program inside the window, in seconds (none of it is in
    a measured step): each FLOP-counted step (FlopCounterMode dispatches every op in Python),
    its ratio to a measured step, the CPU peak check in another process, the trace export."""
    out: dict[str, Any] = {k: round(v, 6) for k, v in costs.items()}
    if counts:
        out["flop_counted_step_s"] = [round(c["seconds"], 6) for c in counts]
        if base:
            out["flop_counted_step_ratio"] = round(statistics.median(c["seconds"] for c in counts) / base, 3)
    return out


def memory_by_phase(steps: list[dict[str, int]], backend: Any) -> dict[str, Any] | None:
    """run.json's profile.memory_by_phase: the median over measured steps of the memory in use at
    each boundary (bytes), and what was read (allocated on CUDA, resident on CPU)."""
    names = ("start", "forward end", "backward end", "step end")
    got = {n: [s[n] for s in steps if n in s] for n in names}
    if not any(got.values()):
        return None
    kind = "cuda_allocated" if getattr(backend, "kind", "cpu") == "cuda" else "process_rss"
    return {"source": kind, "bytes": {n: int(statistics.median(v)) for n, v in got.items() if v}}


def _now() -> float:
    import time

    return time.perf_counter()


def _median(xs: list[int]) -> int | None:
    return int(statistics.median_low(xs)) if xs else None


def _shape(x: Any) -> list[int] | None:
    from trainprof.integrations._common import first_tensor

    t = first_tensor(x) if not hasattr(x, "shape") else x
    return list(t.shape) if t is not None else None
