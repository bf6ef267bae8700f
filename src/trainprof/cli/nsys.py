"""`trainprof nsys-command [-- COMMAND ...]`: the Nsight Systems line for a run or a script.

Nsight Systems sees what torch.profiler cannot: OS runtime calls, thread scheduling, NVTX
ranges across processes. For `trainprof run` the line adds `--nsys-capture`, which runs the
profiled steps inside cudaProfilerStart/Stop, so `--capture-range=cudaProfilerApi` records
only those (warm-up, compilation and evaluation stay out of the report); every phase is an
NVTX range `trainprof.<phase>`. A user's script captures what it brackets with
`torch.cuda.profiler.start()/stop()`, or everything with `--whole`.
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass

from trainprof.controls import shell_join, visible
from trainprof.errors import ConfigError
from trainprof.flags import add_flags, build, option, section
from trainprof.options import OutputOptions
from trainprof.outdir import stamp

TRACE = "cuda,nvtx,osrt"  # GPU work, our phase ranges, and the OS calls a host stall hides in


@dataclass(frozen=True)
class NsysCommand:
    """`trainprof nsys-command`'s configuration (its flags: trainprof/flags.py)."""

    report_path: str | None = option(None, flag="--output", metavar="PATH")
    """report path without extension (default runs/nsys-<timestamp>)"""
    steps: int = 3
    """captured steps of a trainprof run"""
    whole: bool = False
    """capture the whole program instead of the cudaProfilerStart/Stop range"""
    output: OutputOptions = section(OutputOptions(), flags=("json",), helps={
        "json": "print {argv, command, notes} as JSON"})
    """what is printed"""
    program: tuple[str, ...] = option((), positional=True, nargs=argparse.REMAINDER, metavar="-- COMMAND")
    """the program to profile (default: trainprof run)"""

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ConfigError("steps", "must be ≥ 1", got=self.steps)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("nsys-command", help="print the Nsight Systems (nsys profile) command for a run or a script",
                       description="Print the `nsys profile` line that records a CUDA + NVTX + OS-runtime "
                       "timeline of the profiled steps. Without a COMMAND it profiles `trainprof run`; "
                       "after `--` give your own (e.g. -- python train.py --lr 3e-4).")
    add_flags(p, NsysCommand)
    p.set_defaults(func=nsys_command)


def is_trainprof_run(program: list[str]) -> bool:
    """`trainprof run ...` or `python -m trainprof run ...`."""
    if program[:2] == ["trainprof", "run"]:
        return True
    return len(program) >= 4 and program[1:4] == ["-m", "trainprof", "run"]


def _flag_value(argv: list[str], flag: str) -> str | None:
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def nsys_line(program: list[str], output: str, steps: int, whole: bool) -> tuple[list[str], list[str]]:
    """(argv, notes) of the nsys line for `program` (a pure function of its arguments)."""
    notes = []
    ours = is_trainprof_run(program)
    if ours:
        program = [a for a in program if a != "--profile"]  # torch.profiler and nsys both need CUPTI
        if "--nsys-capture" not in program:
            program = [*program, "--nsys-capture"]
        given = _flag_value(program, "--profile-steps")
        if given is None:
            program = [*program, "--profile-steps", str(steps)]
        else:
            steps = int(given) if given.isdigit() else steps
    argv = ["nsys", "profile", f"--trace={TRACE}", "--sample=none", "--cpuctxsw=none"]
    if not whole:
        argv += ["--capture-range=cudaProfilerApi", "--capture-range-end=stop"]
        if not ours:
            notes.append("your program must call torch.cuda.profiler.start() before and "
                         "torch.cuda.profiler.stop() after the steps to capture (or pass --whole)")
    argv += [f"--output={output}", "--force-overwrite=false", *program]
    if ours:
        notes.append(f"captures {steps} steps after the measured ones (and two uncaptured warm-up "
                     "steps); phases are NVTX ranges trainprof.<phase>")
    notes.append(f"then: nsys stats {output}.nsys-rep (summaries) or open it in nsys-ui")
    return argv, notes


def nsys_command(args: argparse.Namespace) -> int:
    cmd = build(NsysCommand, args)
    program = list(cmd.program)
    if program[:1] == ["--"]:
        program = program[1:]
    if not program:
        program = ["trainprof", "run"]
    output = cmd.report_path or f"runs/nsys-{stamp()}"
    argv, notes = nsys_line(program, output, cmd.steps, cmd.whole)
    if shutil.which("nsys") is None:
        notes.append("nsys is not on this machine's PATH: install Nsight Systems on the GPU machine")
    if cmd.output.json:
        print(json.dumps({"argv": argv, "command": shell_join(argv), "notes": notes}, indent=2))
        return 0
    print(shell_join(argv))  # $'...' for a word holding a control character: shown, not sent
    for n in notes:
        print(f"# {visible(n)}")
    return 0
