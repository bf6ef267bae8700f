"""`trainprof bench KIND`: micro-benchmarks of this machine, each saved as DIR/bench.json."""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path
from typing import Any, Callable

from trainprof.bounded import env_int
from trainprof.controls import visible


HELP = {"matmul": "maximum achievable matmul TFLOP/s over a sweep of shapes, per dtype",
        "bandwidth": "device memory copy bandwidth; host↔device pinned vs pageable on a GPU",
        "allreduce": "collective time, algbw and busbw over N ranks (NCCL on GPUs, gloo on CPU)",
        "dataloader": "throughput of the reference data pipeline over num_workers × pin_memory",
        "shapes": "GEMM shape search: SwiGLU d_ff near 8/3·h, vocab padding, head dims",
        "batch": "the reference workload's tokens/s per micro-batch (powers of two) up to the memory limit",
        "scaling": "the reference workload on 1, 2, 4 ... ranks: job tokens/s, scaling efficiency, the collectives' "
                   "share"}



def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.bench.config import BenchOptions
    from trainprof.bench.workload_config import all_kinds
    from trainprof.flags import add_flags

    p = sub.add_parser(
        "bench", help="micro-benchmarks: matmul, bandwidth, allreduce, dataloader, shapes; batch, scaling",
        description="Measure this machine's real ceilings: matmul TFLOP/s, memory bandwidth, "
        "collective bandwidth, data-pipeline throughput and the fastest GEMM shapes; and the reference "
        "workload's throughput per micro-batch (batch) and per rank count (scaling). Each run "
        "writes DIR/bench.json and prints a table.")
    p.set_defaults(func=bench)
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    for name, config in all_kinds().items():  # each benchmark's flags are its config's fields (bench/config.py)
        k = kinds.add_parser(name, help=HELP[name], description=HELP[name])
        add_flags(k, config)
        add_flags(k, BenchOptions)


# --- flags → config ----------------------------------------------------------------------


def _config(args: argparse.Namespace, kind: str, device: str) -> tuple[Any, Callable, int]:
    """The benchmark's configuration, resolved for the device, its run function and version."""
    from trainprof.bench.workload_config import TRAINS, all_kinds
    from trainprof.flags import build

    cfg = build(all_kinds()[args.kind], args)
    if args.kind == "matmul":
        from trainprof.bench import matmul
        from trainprof.bench.gemm import fp8_available

        probe = "fp8" in cfg.dtypes or (kind == "cuda" and not cfg.dtypes)
        return cfg.resolved(kind, fp8=probe and fp8_available(device)), matmul.run, matmul.VERSION
    if args.kind == "allreduce":
        from trainprof.bench import collectives

        world = env_int("WORLD_SIZE", 1)  # > 1: this is a rank of torchrun's job
        cfg = dataclasses.replace(cfg, nproc=world) if world > 1 else cfg
        # each rank takes its own device (cuda:LOCAL_RANK): the run takes the device string
        return (cfg.resolved(kind), lambda c, _backend, progress: collectives.run(c, device, progress),
                collectives.VERSION)
    import importlib

    # the kinds that train the workload are jobs (fresh `trainprof run` processes)
    module = importlib.import_module(f"trainprof.jobs.bench_{args.kind}" if args.kind in TRAINS
                                     else f"trainprof.bench.{args.kind}")
    return cfg.resolved(kind), module.run, module.VERSION


def _launch_allreduce(args: argparse.Namespace, device: str, opts) -> int:  # noqa: ANN001
    """Not under torchrun: check what can be checked here, then run this very command on
    `--nproc` ranks under torchrun (jobs/torchrun.py); rank 0 writes bench.json and prints."""
    from trainprof.bench import collectives
    from trainprof.jobs.torchrun import relaunch, strip_flag

    cfg, _, _ = _config(args, "cuda" if device.startswith("cuda") else "cpu", device)
    collectives.check(cfg, device)
    out = _out_dir(opts.output.out, args.kind, opts.output.force)
    argv = strip_flag(list(args.argv), "--nproc")
    if opts.output.out is None:
        argv += ["--out", str(out)]  # the folder this process named, not one per rank's clock
    own = bool(cfg.master_port) or cfg.master_addr != "127.0.0.1"  # else torchrun --standalone
    return relaunch(argv, cfg.nproc, master_addr=cfg.master_addr if own else None,
                    master_port=cfg.master_port or None, timeout_s=cfg.timeout_s, what="bench allreduce")


# --- the command -------------------------------------------------------------------------


def _out_dir(arg: str | None, kind: str, force: bool = False) -> Path:
    from trainprof import outdir

    return outdir.out_or_fresh(arg, force=force, name=f"bench-{kind}-{{stamp}}")


def bench(args: argparse.Namespace) -> int:
    from trainprof.report.console import console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from trainprof.backends import get_backend, resolve_device
    from trainprof.bench.config import BenchOptions
    from trainprof.bench.contention import Contention
    from trainprof.bench.result import environment, envelope, write
    from trainprof.bench.tables import print_bench
    from trainprof.flags import build

    opts = build(BenchOptions, args)
    from trainprof.bench.workload_config import all_kinds

    build(all_kinds()[args.kind], args)  # every value checked before the device is touched
    device = resolve_device(opts.device)
    if args.kind == "allreduce":
        if env_int("WORLD_SIZE", 1) == 1:
            return _launch_allreduce(args, device, opts)
        if device.startswith("cuda"):  # a rank of torchrun's job: its own GPU, never all on cuda:0
            device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
    backend = get_backend(device)
    cfg, run, version = _config(args, backend.kind, device)
    if args.kind == "allreduce" and env_int("RANK", 0) != 0:
        run(cfg, backend, None)  # measures with the others; rank 0 writes and prints
        return 0
    out = _out_dir(opts.output.out, args.kind, opts.output.force)

    from trainprof.jobs.torchrun import STDERR_TTY_ENV

    # under our torchrun relaunch, stderr is a pipe to a terminal: the bar may still draw
    tty = True if os.environ.get(STDERR_TTY_ENV) == "1" else None
    bar = Progress(TextColumn(f"[bold]bench {args.kind}[/] {{task.description}}"), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn(),
                   console=console(stderr=True, force_terminal=tty), transient=True)
    task = bar.add_task("", total=None)

    def progress(done: int, total: int, what: str) -> None:
        # Started at the first case, so a setup error prints one clean line, no bar debris;
        # and only on a terminal (a stopped bar leaves a blank line in a log file).
        bar.update(task, completed=done, total=total, description=what)
        if not bar.live.is_started and bar.console.is_terminal:
            bar.start()

    t0 = time.monotonic()
    try:
        with Contention() as contention:
            payload = run(cfg, backend, progress)
    finally:
        if bar.live.is_started:  # stop() on a never-started bar still prints a newline
            bar.stop()
    others = contention.others_cpu_share
    peer_cpu_s = payload.pop("peer_cpu_s", 0.0)  # allreduce: the job's other ranks are not "others"
    if others is not None and peer_cpu_s:
        wall = time.monotonic() - t0
        others = round(max(0.0, others - peer_cpu_s / (wall * (os.cpu_count() or 1))), 3)
    env = environment(backend, version, others)
    record = envelope(args.kind, env, cfg.to_dict(), payload)
    from trainprof import atomic, jsontext

    with atomic.staged_dir(out, force=opts.output.force) as stage:  # appears complete, with its manifest
        write(stage, record)
    path = out / "bench.json"
    if opts.output.json:
        print(jsontext.dumps(record))
    else:
        con = console()
        print_bench(record, con)
        con.print(visible(f"wrote {path}"), markup=False)  # a path is shown, never acted on
    return 0
