"""Nsight Compute and a trace: the ncu commands that profile a trace's top kernels
(`trainprof ncu-command`), and ncu's measured kernels read back onto the analysis's roofline
(`trainprof analyze --ncu CSV`). The CSV parser and the points are analysis/cost/ncu.py's."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from trainprof.errors import ConfigError, InputError, UsageError
from trainprof.flags import option
from trainprof.hardware.overrides import PeakOverrides
from trainprof.recordtypes.analysis import Analysis
from trainprof.recordtypes.roofline import NcuBlock


@dataclass(frozen=True)
class NcuJob:
    """`trainprof ncu-command`'s configuration (its flags: trainprof/flags.py)."""

    trace: str = option("", positional=True, metavar="TRACE")
    """a Kineto trace of the program to profile"""
    top: int = option(5, metavar="K")
    """kernels to profile: each is replayed ~40 times by ncu, so this is a cost, not a table's length; 5 is the
    assignment's top-5, as in a study's ncu plan"""
    program: str = "python train.py"
    """the command that runs your training"""
    report: str = "trainprof_ncu"
    """ncu report name"""

    def __post_init__(self) -> None:
        if not isinstance(self.top, int) or self.top < 1:
            raise ConfigError("top", "must be ≥ 1", got=self.top)


@dataclass(frozen=True)
class NcuPlan:
    collect: str
    """the ncu command that profiles the kernels (a shell line)"""
    export: str
    """the command that exports its raw metrics as CSV"""
    kernels: list[dict]
    """the trace's top kernels it profiles (memcpy and memset left out: ncu does not profile them)"""


def ncu_plan(trace: str, top: int, program: str, report: str) -> NcuPlan:
    """The commands for the `top` kernels of `trace` (one file), run inside `program`."""
    from trainprof.analysis.cost.ncu import ncu_command
    from trainprof.jobs.analyze import analyze_one, expand_paths

    files = expand_paths([trace])
    if len(files) != 1:
        raise UsageError(f"{trace}: give one trace file, not a folder of {len(files)}")
    rank = analyze_one(str(files[0]), top)
    kernels = [msgspec.to_builtins(k) for k in rank.top_kernels if k.kind not in ("memcpy", "memset")]
    if not kernels:
        raise UsageError(f"{trace}: the trace has no GPU kernels to profile")
    collect, export = ncu_command(kernels, rank.steps or 1, program, report)
    return NcuPlan(collect, export, kernels)


def ncu_block(path: str, result: Analysis, opts: PeakOverrides) -> NcuBlock:
    """analysis.json's `ncu`: Nsight Compute's kernels on the roofline (roofs from the CSV's
    device, else the trace's)."""
    from trainprof.analysis.cost.ncu import ncu_points, parse_ncu_csv
    from trainprof.analysis.cost.roofline import roofline_header
    from trainprof.bounded import read_capped
    from trainprof.jobs.analyze import resolve_roof

    try:
        text = read_capped(path).decode("utf-8", errors="replace")  # a regular file, capped
    except InputError as e:
        raise InputError(f"--ncu {e}") from None
    kernels = parse_ncu_csv(text, source=f"--ncu {path}")
    if not kernels:
        raise InputError(f"--ncu {path}: no kernel rows")
    device = next((k.device for k in kernels if k.device), None) or result.ranks[0].device_name
    roof = resolve_roof(device, opts, measure_cpu=False)  # ncu measured GPU kernels: never this CPU's roofs
    points = ncu_points(kernels, roof)
    top_dtype = points[0].dtype if points else None
    return NcuBlock(file=path, device_name=device, kernels=len(kernels), roofline=roofline_header(roof, top_dtype),
                    points=points)
