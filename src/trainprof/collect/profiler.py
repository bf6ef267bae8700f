"""Record a Kineto trace of a few training steps with torch.profiler.

The profiled steps run *after* the measured ones and are not part of the summary: the
profiler's own overhead (op recording, shapes, CUPTI buffers) would otherwise inflate the
step times we report. Schedule: 1 wait step, 1 warm-up step (CUPTI start-up cost lands
there), then `active` recorded steps, one `ProfilerStep#N` each. N is the program's step
number (`first_step` + the profiler's count), so the trace, analysis.json and every report
name the steps run.json does: torch.profiler counts from 0 at its own start, and a run of
12 steps showed its profiled steps 14–15 as "2, 3" (issue #37).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from trainprof.options import MonitorOptions

WAIT, WARMUP = 1, 1


@dataclass(frozen=True)
class ProfileConfig:
    active: int = 2
    """steps recorded in the trace"""
    record_shapes: bool = True
    """input shapes and dtypes per op (needed for the roofline)"""
    with_stack: bool = False
    """Python call sites per op (large traces; useful for host-sync call sites)"""
    module_scopes: bool = True
    """one record_function range per nn.Module call (collect/module_scopes.py): per-module times"""
    modules: str | None = None
    """--modules PATTERN: only the matching modules get a range (every op is still recorded)"""
    py_spy: bool = False
    """sample the host's Python stacks with py-spy over the recorded steps (collect/py_spy.py)"""
    tool: str = "torch"
    """"torch": torch.profiler writes a Kineto trace; "nsys": the active steps run between
    cudaProfilerStart/Stop for `nsys profile --capture-range=cudaProfilerApi` (the two tools
    both need CUPTI, so one at a time)"""

    @property
    def total_steps(self) -> int:
        return WAIT + WARMUP + self.active

    @classmethod
    def of(cls, monitor: MonitorOptions, tool: str = "torch") -> ProfileConfig:
        """The trace a command's options ask for (`run`, `profile`'s agent). Nsight Systems only
        brackets the steps: call sites, module ranges and py-spy are torch.profiler's."""
        if tool == "nsys":
            return cls(active=monitor.profile_steps, tool="nsys")
        return cls(active=monitor.profile_steps, with_stack=monitor.with_stack, modules=monitor.modules,
                   py_spy=monitor.py_spy)


class StepProfiler:
    """`with StepProfiler(cfg, device, path, first_step).running() as p: ... p.step()` after each
    training step; `first_step`: the program's number of the step that runs first under it."""

    def __init__(self, cfg: ProfileConfig, device: str, trace_path: Path, first_step: int = 0,
                 metadata: dict[str, str] | None = None) -> None:
        self.cfg = cfg
        self.metadata = metadata or {}  # {key: JSON text} for the trace's top level (trainprof_mesh)
        self.first_step = first_step
        self.device = device
        self.trace_path = trace_path
        self._prof = None
        self._steps = 0
        self._spy = None

    @contextmanager
    def running(self) -> Iterator["StepProfiler"]:
        import os

        # libkineto logs start/stop lines to stderr at its default level; keep the terminal
        # for our report (a user's own KINETO_LOG_LEVEL wins).
        os.environ.setdefault("KINETO_LOG_LEVEL", "5")
        from torch.profiler import ProfilerActivity, profile, schedule

        acts = [ProfilerActivity.CPU]
        if self.device.startswith("cuda"):
            acts.append(ProfilerActivity.CUDA)

        def ready(prof) -> None:  # noqa: ANN001
            # export_chrome_trace gzips when the name ends in .gz
            prof.export_chrome_trace(str(self.trace_path))

        first = self.first_step
        p = profile(
            activities=acts,
            # skip_first: the schedule sees the program's step numbers, the same actions as from 0
            schedule=schedule(skip_first=first, wait=WAIT, warmup=WARMUP, active=self.cfg.active, repeat=1),
            record_shapes=self.cfg.record_shapes,
            with_stack=self.cfg.with_stack,
            on_trace_ready=ready,
        )
        # step_num names ProfilerStep#N (torch/profiler/profiler.py: start() and step() read it);
        # set before __enter__ so the first range is already the program's number
        p.step_num = first
        for k, v in self.metadata.items():  # preset: add_metadata_json before the active steps is lost
            p.preset_metadata_json(k, v)
        with p as prof, self._scopes():
            self._prof = prof
            yield self
        self._prof = None
        self._stop_spy()

    def _scopes(self):
        from contextlib import nullcontext

        from trainprof.collect.module_scopes import module_scopes
        from trainprof.userregex import compile_user

        if not self.cfg.module_scopes:
            return nullcontext()
        return module_scopes(compile_user(self.cfg.modules, "--modules") if self.cfg.modules else None)

    def step(self) -> None:
        if self._prof is not None:
            if self._steps + 1 == self.cfg.total_steps:
                self._stop_spy()  # before the step that exports the trace: the samples cover the steps only
            self._prof.step()
            self._steps += 1
            if self.cfg.py_spy and self._steps == WAIT + WARMUP:  # the recorded steps start now
                from trainprof.analysis.timeline.host_stacks import sibling
                from trainprof.collect.py_spy import PySpy

                self._spy = PySpy(sibling(self.trace_path))
                self._spy.start()

    def _stop_spy(self) -> None:
        spy, self._spy = self._spy, None
        if spy is not None:
            spy.stop()
            if spy.notice:
                import sys

                print(f"trainprof: {spy.notice}", file=sys.stderr)
