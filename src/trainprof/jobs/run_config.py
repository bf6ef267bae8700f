"""`trainprof run`'s configuration: the workload (`train`), the peaks, what the run records
beside its steps (`run`) and where it goes (`output`); every flag of the command is one of
these fields (trainprof/flags.py), each declared once (jobs/run.py reads them, no copies).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from trainprof.errors import ConfigError
from trainprof.flags import option, section
from trainprof.hardware.overrides import PeakOverrides
from trainprof.options import MonitorOptions, OutputOptions, Ranks, StepRows
from trainprof.workload.config import TrainConfig

if TYPE_CHECKING:
    from trainprof.collect.profiler import ProfileConfig

OUTPUT = "output"  # the --help groups the flags appear in
DISTRIBUTED = "distributed (torch.distributed, launched with torchrun)"

LAYOUT_FLAGS = ("dp", "tp", "pp", "pp_microbatches", "pp_schedule")  # workload/layout_flags.py


@dataclass(frozen=True)
class RunOptions:
    """What a run records beside its measured steps, and on how many ranks."""

    PATH: ClassVar[str] = "run"
    # --help lists the Monitor's flags among run's own, where they always were
    FLAG_ORDER: ClassVar[tuple[str, ...]] = ("nproc", "profile", "profile_steps", "with_stack", "modules", "py_spy",
                                             "memory_snapshot", "nsys_capture", "system_interval", "stop_at")

    ranks: Ranks = section(Ranks(), flat=True, group=DISTRIBUTED, helps={
        "nproc": "ranks on this machine: runs torchrun --standalone --nproc-per-node N -m trainprof run ..."})
    """how many ranks (options.Ranks, shared with `profile`)"""
    profile: bool = False
    """after the measured steps, record a torch.profiler trace of a few more (DIR/trace.json.gz; not in the
    summary)"""
    monitor: MonitorOptions = section(MonitorOptions(), flat=True, helps={
        "profile_steps": "steps recorded with --profile",
        "modules": "with --profile: per-module ranges only for the modules whose class or Class_N label matches "
                   "this RE2 pattern (default: every module; every op is still recorded)",
        "py_spy": "with --profile: sample the host's Python stacks with py-spy over the profiled steps "
                  "(DIR/trace.py_spy.txt)"})
    """the profiled steps and the system sampler (options.MonitorOptions, shared with `profile`)"""
    memory_snapshot: int = option(0, const=2, metavar="N")
    """CUDA: after the measured steps, record allocation history over N more steps (--memory-snapshot alone:
    2): DIR/memory_snapshot.pickle for pytorch.org/memory_viz, and peak memory by category and
    fragmentation in run.json"""
    nsys_capture: bool = False
    """run the --profile-steps extra steps inside cudaProfilerStart/Stop for Nsight Systems instead of
    torch.profiler (CUDA only; see `trainprof nsys-command`)"""
    stop_at: float | None = option(None, metavar="EPOCH_S")
    """end the measured steps early, at a step boundary, so that the run (profile and validation included)
    ends by this time in seconds since the epoch; `trainprof study` and `tune` pass their deadline"""

    def __post_init__(self) -> None:
        def bad(name: str, why: str, got: object) -> ConfigError:
            return ConfigError(name, why, owner=self.PATH, got=got)

        if self.monitor.profile_steps < 1:  # --profile turns the trace on: 0 steps would be no trace
            raise bad("profile_steps", "must be ≥ 1", self.monitor.profile_steps)
        if self.monitor.py_spy and not self.profile:
            raise bad("py_spy", "needs --profile (py-spy samples the profiled steps)", True)
        if self.memory_snapshot < 0:
            raise bad("memory_snapshot", "must be ≥ 1 (0: off)", self.memory_snapshot)
        if self.nsys_capture and self.profile:
            raise ConfigError("nsys_capture", "replaces {0} (torch.profiler and Nsight Systems both need CUPTI): "
                              "pass one of them", "profile", owner=self.PATH)

    @property
    def trace_tool(self) -> str | None:
        """What records the extra profiled steps: "torch" (--profile), "nsys" (--nsys-capture), or None."""
        return "nsys" if self.nsys_capture else "torch" if self.profile else None

    @property
    def profile_config(self) -> ProfileConfig | None:
        """The extra profiled steps: torch.profiler (--profile), Nsight Systems (--nsys-capture), or None."""
        from trainprof.collect.profiler import ProfileConfig

        tool = self.trace_tool
        return ProfileConfig.of(self.monitor, tool) if tool is not None else None


@dataclass(frozen=True)
class RunJob:
    """`trainprof run`'s configuration."""

    train: TrainConfig = section(TrainConfig(), group="workload", groups={
        "strategy": DISTRIBUTED, "bind_numa": DISTRIBUTED, **{k: DISTRIBUTED for k in LAYOUT_FLAGS}, "checkpoint_every": OUTPUT})
    """the workload (not yet `.resolved()`: the preset fills what is unset)"""
    peaks: PeakOverrides = section(PeakOverrides(), group="peaks")
    """the user's peaks for MFU/HFU and the roofline"""
    run: RunOptions = section(RunOptions(), group=OUTPUT)
    """what the run records beside its steps"""
    output: OutputOptions = section(OutputOptions(), group=OUTPUT, helps={
        "force": "replace an existing non-empty --out (a plain run: once the new one is complete; with "
                 "--checkpoint-every: at the start)",
        "resume": "continue the run in --out from its last checkpoint; refused if the configuration differs from "
                  "the checkpoint's",
        "resume_anyway": "with --resume: continue even though seed, batch, lr, dtype, ... differ from the "
                         "checkpoint's",
        "json": "print run.json to stdout instead of tables"})
    """where the run goes"""
    table: StepRows = section(StepRows(), flat=True, group=OUTPUT)
    """the steps table (options.StepRows, shared with `profile`)"""

    def __post_init__(self) -> None:
        steps, warmup = self.train.steps, self.train.warmup_steps
        if steps <= warmup:
            # the summary needs a measured step: --steps 2 with the default 2 warm-up steps used to
            # measure 1 after 1 warm-up step without a word (issue #37); tune and study refuse it too
            raise ConfigError(("train", "steps"), f"must be ≥ {warmup + 1}: {{0}} is {warmup} and the summary needs "
                              "one measured step after the warm-up", ("train", "warmup_steps"), got=steps)
