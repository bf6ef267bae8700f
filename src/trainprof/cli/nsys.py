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

from trainprof.outdir import stamp
from trainprof.controls import shell_join, visible
from trainprof.errors import UsageError

TRACE = "cuda,nvtx,osrt"  # GPU work, our phase ranges, and the OS calls a host stall hides in


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("nsys-command", help="print the Nsight Systems (nsys profile) command for a run or a script",
                       description="Print the `nsys profile` line that records a CUDA + NVTX + OS-runtime "
                       "timeline of the profiled steps. Without a COMMAND it profiles `trainprof run`; "
                       "after `--` give your own (e.g. -- python train.py --lr 3e-4).")
    p.add_argument("--output", help="report path without extension (default runs/nsys-<timestamp>)")
    p.add_argument("--steps", type=int, default=3, help="captured steps of a trainprof run (default 3)")
    p.add_argument("--whole", action="store_true",
                   help="capture the whole program instead of the cudaProfilerStart/Stop range")
    p.add_argument("--json", action="store_true", help="print {argv, command, notes} as JSON")
    p.add_argument("program", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                   help="the program to profile (default: trainprof run)")
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


def build(program: list[str], output: str, steps: int, whole: bool) -> tuple[list[str], list[str]]:
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
    if args.steps < 1:
        raise UsageError(f"--steps must be ≥ 1, got {args.steps}")
    program = list(args.program)
    if program[:1] == ["--"]:
        program = program[1:]
    if not program:
        program = ["trainprof", "run"]
    output = args.output or f"runs/nsys-{stamp()}"
    argv, notes = build(program, output, args.steps, args.whole)
    if shutil.which("nsys") is None:
        notes.append("nsys is not on this machine's PATH: install Nsight Systems on the GPU machine")
    if args.json:
        print(json.dumps({"argv": argv, "command": shell_join(argv), "notes": notes}, indent=2))
        return 0
    print(shell_join(argv))  # $'...' for a word holding a control character: shown, not sent
    for n in notes:
        print(f"# {visible(n)}")
    return 0
