"""`trainprof memory`: analytic vs measured training memory, largest micro-batch, memory ladder."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from trainprof.controls import visible
from trainprof.errors import UsageError

# On CPU there is no device to fill: the search runs against an emulated device of this
# size (peak RSS above the baseline), small enough that the tiny preset's search takes
# seconds on 2 cores. --memory-limit picks another size.
DEFAULT_CPU_LIMIT = "512MiB"

_UNITS = {"": 1, "b": 1, "k": 2**10, "kib": 2**10, "m": 2**20, "mib": 2**20, "g": 2**30, "gib": 2**30,
          "t": 2**40, "tib": 2**40, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)(?:e([+-]?\d+))?\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_size(text: str, flag: str = "--memory-limit") -> int:
    """'2GiB', '512MiB', '1.5GB', '800M', '3e9' → bytes. KiB/MiB/GiB and bare K/M/G are
    powers of 1024; KB/MB/GB powers of 1000; no unit means bytes. At most MAX_SIZE."""
    from decimal import Decimal

    shown = repr(text) if len(text) <= 40 else repr(text[:40] + "...")
    m = _SIZE.match(text)
    unit = m.group(3).lower() if m else ""
    if not m or unit not in _UNITS:
        raise UsageError(f"{flag} {shown}: expected a size such as 2GiB, 512MiB, 1.5GB or 3e9 (bytes)")
    # Decimal, with the exponent clamped first: 10 ** int("9999999999") is a 10-billion-digit
    # int (issue #33: it hung) and float("1e400") overflowed into a traceback
    exp = m.group(2) or "0"
    digits = exp.lstrip("+-").lstrip("0") or "0"
    e = min(int(digits), 9999) if len(digits) <= 4 else 9999
    value = Decimal(m.group(1)).scaleb(-e if exp.startswith("-") else e) * _UNITS[unit]
    if not value >= 1:
        raise UsageError(f"{flag} {shown}: must be at least 1 byte")
    if value > MAX_SIZE:
        raise UsageError(f"{flag} {shown}: more than 1 EiB; no device holds that much")
    return int(value)


MAX_SIZE = 2**60  # 1 EiB


# The TrainConfig fields a memory study starts from (flags generated from them); the ladder
# changes the others. `--steps` is per probe, passed beside the config.
CONFIG_FIELDS = ("preset", "device", "micro_batch", "seq_len", "dtype", "attention")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.flags import add_flags
    from trainprof.workload.config import TrainConfig

    p = sub.add_parser(
        "memory", help="training memory: analytic breakdown vs measured peak, largest micro-batch, memory ladder",
        description="Break training memory down by formula (weights, gradients, AdamW states, activations "
        "per Korthikanti et al. 2022, logits), measure the real peak of a few training steps, find the "
        "largest micro-batch that fits (doubling, then bracketing; OOMs caught), and climb the memory "
        "ladder (gradient accumulation, activation checkpointing, optimizer, bf16). Each measurement "
        "runs in a fresh process.")
    p.set_defaults(func=memory)
    add_flags(p.add_argument_group("workload"), TrainConfig, only=(*CONFIG_FIELDS, "steps"),
              defaults={"steps": 2}, helps={
                  "micro_batch": "sequences per forward for the breakdown and ladder (default: the preset's)",
                  "steps": "training steps per measurement (the second is the first with AdamW states)"})
    add_flags(p.add_argument_group("search and ladder"), MemoryFlags, only=("memory_limit", "no_search", "no_ladder"),
              switches=True, metavars={"memory_limit": "SIZE"}, helps={"memory_limit": (
                  "device capacity to search against, e.g. 2GiB, 512MiB, 1.5GB: on CPU it emulates a device (peak "
                  f"RSS above the baseline; default {DEFAULT_CPU_LIMIT}); on CUDA the allocator peak is held to it "
                  "(default: the whole GPU)")})
    add_flags(p.add_argument_group("output"), MemoryFlags, only=("out", "force", "json"), switches=True)


@dataclass(frozen=True)
class MemoryFlags:
    """`trainprof memory`'s own flags (the workload's come from TrainConfig)."""

    memory_limit: str | None = None
    """device capacity to search against (a size: 2GiB, 512MiB, 1.5GB, 3e9); default: DEFAULT_CPU_LIMIT on
    CPU, the whole GPU on CUDA"""
    no_search: bool = False
    """skip the largest-micro-batch search"""
    no_ladder: bool = False
    """measure the configuration only, not the memory ladder"""
    out: str | None = None
    """folder for memory.json (default runs/<timestamp>-memory); an existing non-empty folder is refused
    without --force"""
    force: bool = False
    """replace what trainprof wrote in an existing --out (never other files)"""
    json: bool = False
    """print memory.json to stdout instead of tables"""


def _out_dir(arg: str | None, force: bool = False) -> Path:
    """Checked before the study (a parent that is a file, a non-empty folder without --force,
    a file trainprof did not write with it: now, not after minutes of probes)."""
    from trainprof import outdir

    if arg is None:
        return outdir.fresh_dir("{stamp}-memory")
    return outdir.check_out(arg, force=force)


def memory(args: argparse.Namespace) -> int:
    from rich.console import Console

    from trainprof import atomic, jsontext
    from trainprof.flags import from_args
    from trainprof.workload.config import TrainConfig

    if args.steps < 1:
        raise UsageError(f"--steps must be ≥ 1, got {args.steps}")
    limit = parse_size(args.memory_limit) if args.memory_limit is not None else None
    cfg = from_args(TrainConfig, args, only=CONFIG_FIELDS).resolved()
    out = _out_dir(args.out, args.force)

    from trainprof.backends import resolve_device
    from trainprof.jobs.memory_study import study_memory

    source = "--memory-limit"
    if limit is None and resolve_device(cfg.device) == "cpu":
        limit, source = parse_size(DEFAULT_CPU_LIMIT), "the CPU default; --memory-limit to change"

    progress, on_probe = _progress(Console(stderr=True))
    try:
        result = study_memory(cfg, limit_bytes=limit, limit_source=source, search=not args.no_search,
                              ladder=not args.no_ladder, steps=args.steps, on_probe=on_probe)
    finally:
        if progress.live.is_started:  # stop() on a never-started bar still prints a newline
            progress.stop()
    text = jsontext.dumps(result) + "\n"
    path = out / "memory.json"
    with atomic.staged_dir(out, force=args.force) as stage:  # the folder appears complete, with its manifest
        atomic.write_text(stage / "memory.json", text)
    if args.json:
        print(text, end="")
    else:
        from trainprof.report.memory_terminal import print_memory

        con = Console()
        print_memory(result, con)
        con.print(visible(f"wrote {path}"), markup=False)  # a path is shown, never acted on
    return 0


def _progress(err):  # a rich Console → (Progress, the on_probe callback)
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(SpinnerColumn(), TextColumn("[bold]memory[/] probe {task.completed:.0f}: {task.description}"),
                        TimeElapsedColumn(), console=err, transient=True)
    task = progress.add_task("", total=None)

    def on_probe(stage, config, result):
        # started at the first probe, so a setup error prints one clean line, no bar debris
        if not progress.live.is_started:
            progress.start()
        if result is None:
            what = f"{stage}: micro-batch {config.micro_batch}"
            if config.grad_accum > 1:
                what += f" × {config.grad_accum}"
            flags = [config.dtype, f"{config.optimizer} AdamW"]
            if config.activation_checkpointing:
                flags.append("checkpointing")
            progress.update(task, description=f"{what} ({', '.join(flags)})")
        else:
            progress.advance(task)

    return progress, on_probe
