"""`trainprof bench KIND`: micro-benchmarks of this machine, each saved as DIR/bench.json."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, Callable

from trainprof.controls import visible
from trainprof.errors import UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench", help="micro-benchmarks: matmul, bandwidth, allreduce, dataloader, shapes",
        description="Measure this machine's real ceilings: matmul TFLOP/s, memory bandwidth, "
        "collective bandwidth, data-pipeline throughput and the fastest GEMM shapes. Each run "
        "writes DIR/bench.json and prints a table.")
    p.set_defaults(func=bench)
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    common.add_argument("--out", metavar="DIR",
                        help="folder for bench.json (default runs/bench-KIND-<timestamp>)")
    common.add_argument("--force", action="store_true",
                        help="replace what trainprof wrote in an existing non-empty --out (never other files)")
    common.add_argument("--json", action="store_true", help="print bench.json instead of the table")

    def kind(name: str, help: str) -> argparse.ArgumentParser:
        return kinds.add_parser(name, parents=[common], help=help, description=help)

    m = kind("matmul", "maximum achievable matmul TFLOP/s over a sweep of shapes, per dtype")
    m.add_argument("--sizes", help="shapes: N (square) or MxNxK, comma-separated "
                   "(default CPU 256,512,1024,2048; GPU 2048..16384 and 6144x17920x2816)")
    m.add_argument("--dtype", help="fp32,tf32,bf16,fp16,fp8 (default CPU fp32,bf16; GPU all it runs)")
    m.add_argument("--op", help="mm,linear: torch.mm and/or F.linear (default CPU both, GPU mm)")
    m.add_argument("--warmup", type=int, help="untimed calls per case (default CPU 1, GPU 20)")
    m.add_argument("--iters", type=int, help="most timed calls per case (default CPU 10, GPU 50)")
    m.add_argument("--budget-s", type=float, help="seconds per case before timing stops (default CPU 0.5, GPU 2)")
    m.add_argument("--record", action=argparse.BooleanOptionalAction, default=True,
                   help="CPU: store the best fp32/bf16 as the measured peak of MFU/roofline (default on)")

    b = kind("bandwidth", "device memory copy bandwidth; host↔device pinned vs pageable on a GPU")
    b.add_argument("--sizes", help="buffer sizes, e.g. 1M,16M,256M (default CPU 1M,16M,256M; GPU 64M,256M,1G)")
    b.add_argument("--warmup", type=int, help="untimed copies per case (default CPU 2, GPU 3)")
    b.add_argument("--iters", type=int, help="timed copies per case (default CPU 10, GPU 20)")
    b.add_argument("--record", action=argparse.BooleanOptionalAction, default=True,
                   help="CPU: store copies ≥ 64M as the measured roofline bandwidth (default on)")

    a = kind("allreduce", "collective time, algbw and busbw over N ranks (NCCL on GPUs, gloo on CPU)")
    a.add_argument("--nproc", type=int, default=2,
                   help="ranks on this machine, ≥ 2: runs torchrun --standalone --nproc-per-node N "
                   "-m trainprof bench allreduce ... (default 2; on GPUs one GPU each; under your own "
                   "torchrun: its world size)")
    a.add_argument("--op", default="all_reduce", help="all_reduce,all_gather,reduce_scatter (default all_reduce)")
    a.add_argument("--sizes", help="message sizes S (default CPU 4K,64K,1M,16M; GPU 1M,16M,128M,1G)")
    a.add_argument("--dtype", default="fp32", help="fp32, bf16 or fp16 (default fp32)")
    a.add_argument("--warmup", type=int, help="untimed collectives per size (default 5)")
    a.add_argument("--iters", type=int, help="timed collectives per size (default 20)")
    a.add_argument("--master-addr", default="127.0.0.1",
                   help="rendezvous address of this machine for --nproc (default 127.0.0.1)")
    a.add_argument("--master-port", type=int, default=0,
                   help="rendezvous port for --nproc: torchrun --rdzv-endpoint ADDR:PORT "
                   "(default: --standalone, a free one)")
    a.add_argument("--timeout", type=float, default=120.0,
                   help="seconds before the whole job is stopped (with --nproc), and the process group's "
                   "timeout (default 120)")

    d = kind("dataloader", "throughput of the reference data pipeline over num_workers × pin_memory")
    d.add_argument("--workers", default="0,1,2", help="num_workers values (default 0,1,2)")
    d.add_argument("--pin-memory", choices=("off", "on", "both"),
                   help="pin_memory values (default: off on CPU, both with a GPU)")
    d.add_argument("--batches", type=int, default=40, help="batches per configuration (default 40)")
    d.add_argument("--micro-batch", type=int, default=16, help="sequences per batch (default 16)")
    d.add_argument("--seq-len", type=int, default=256, help="tokens per sequence (default 256)")
    d.add_argument("--data", help="text file or folder (default: this Python's stdlib sources)")

    s = kind("shapes", "GEMM shape search: SwiGLU d_ff near 8/3·h, vocab padding, head dims")
    s.add_argument("--hidden", type=int, default=768, help="model width h (default 768)")
    s.add_argument("--vocab", type=int, default=50257, help="vocabulary size to pad (default 50257)")
    s.add_argument("--tokens", type=int, help="GEMM rows M = batch·sequence (default CPU 256, GPU 8192)")
    s.add_argument("--seq-len", type=int, help="sequence length of the attention GEMMs (default CPU 256, GPU 2048)")
    s.add_argument("--dtype", help="fp32, tf32, bf16 or fp16 (default CPU fp32, GPU bf16)")
    s.add_argument("--ff-steps", type=int, default=3, help="d_ff multiples of 64 each side of 8/3·h (default 3)")
    s.add_argument("--warmup", type=int, help="untimed calls per candidate (default CPU 1, GPU 10)")
    s.add_argument("--iters", type=int, help="most timed calls per candidate (default CPU 5, GPU 30)")
    s.add_argument("--budget-s", type=float, help="seconds per candidate (default CPU 0.3, GPU 1)")


# --- flags → config ----------------------------------------------------------------------


def _matmul(args: argparse.Namespace, kind: str, device: str) -> tuple[Any, Callable, int]:
    from trainprof.bench import matmul
    from trainprof.bench.config import MATMUL_DTYPES, MATMUL_OPS, MatmulConfig
    from trainprof.bench.gemm import fp8_available
    from trainprof.bench.parse import parse_choices, parse_shapes

    dtypes = parse_choices(args.dtype, "--dtype", MATMUL_DTYPES) if args.dtype is not None else ()
    probe = "fp8" in dtypes or (kind == "cuda" and not dtypes)
    cfg = MatmulConfig(
        shapes=parse_shapes(args.sizes, "--sizes") if args.sizes is not None else (), dtypes=dtypes,
        ops=parse_choices(args.op, "--op", MATMUL_OPS) if args.op is not None else (),
        warmup=args.warmup, iters=args.iters, budget_s=args.budget_s, record=args.record,
    ).resolved(kind, fp8=probe and fp8_available(device))
    return cfg, matmul.run, matmul.VERSION


def _bandwidth(args: argparse.Namespace, kind: str, device: str) -> tuple[Any, Callable, int]:
    from trainprof.bench import bandwidth
    from trainprof.bench.config import BandwidthConfig
    from trainprof.bench.parse import parse_sizes

    cfg = BandwidthConfig(sizes=parse_sizes(args.sizes, "--sizes") if args.sizes is not None else (),
                          warmup=args.warmup, iters=args.iters, record=args.record).resolved(kind)
    return cfg, bandwidth.run, bandwidth.VERSION


def _allreduce(args: argparse.Namespace, kind: str, device: str) -> tuple[Any, Callable, int]:
    from trainprof.bench import collectives
    from trainprof.bench.config import COLLECTIVE_OPS, CollectiveConfig
    from trainprof.bench.parse import parse_choices, parse_sizes

    world = int(os.environ.get("WORLD_SIZE", "1"))  # > 1: this is a rank of torchrun's job
    cfg = CollectiveConfig(
        nproc=world if world > 1 else args.nproc, ops=parse_choices(args.op, "--op", COLLECTIVE_OPS),
        sizes=parse_sizes(args.sizes, "--sizes") if args.sizes is not None else (), dtype=args.dtype.lower(),
        warmup=args.warmup, iters=args.iters, master_addr=args.master_addr,
        master_port=args.master_port, timeout_s=args.timeout,
    ).resolved(kind)
    # each rank takes its own device (cuda:LOCAL_RANK): the run takes the device string
    return cfg, lambda c, _backend, progress: collectives.run(c, device, progress), collectives.VERSION


def _launch_allreduce(args: argparse.Namespace, device: str) -> int:
    """Not under torchrun: check what can be checked here, then run this very command on
    `--nproc` ranks under torchrun (jobs/torchrun.py); rank 0 writes bench.json and prints."""
    from trainprof.bench import collectives
    from trainprof.jobs.torchrun import relaunch, strip_flag

    cfg, _, _ = _allreduce(args, "cuda" if device.startswith("cuda") else "cpu", device)
    collectives.check(cfg, device)
    out = _out_dir(args.out, args.kind, getattr(args, 'force', False))
    argv = strip_flag(list(args.argv), "--nproc")
    if args.out is None:
        argv += ["--out", str(out)]  # the folder this process named, not one per rank's clock
    own = bool(cfg.master_port) or cfg.master_addr != "127.0.0.1"  # else torchrun --standalone
    return relaunch(argv, cfg.nproc, master_addr=cfg.master_addr if own else None,
                    master_port=cfg.master_port or None, timeout_s=cfg.timeout_s, what="bench allreduce")


def _dataloader(args: argparse.Namespace, kind: str, device: str) -> tuple[Any, Callable, int]:
    from trainprof.bench import dataloader
    from trainprof.bench.config import DataloaderConfig
    from trainprof.bench.parse import parse_ints

    pin = {"off": (False,), "on": (True,), "both": (False, True), None: ()}[args.pin_memory]
    cfg = DataloaderConfig(workers=parse_ints(args.workers, "--workers"), pin_memory=pin,
                           batches=args.batches, micro_batch=args.micro_batch, seq_len=args.seq_len,
                           data=args.data).resolved(kind)
    return cfg, dataloader.run, dataloader.VERSION


def _shapes(args: argparse.Namespace, kind: str, device: str) -> tuple[Any, Callable, int]:
    from trainprof.bench import shapes
    from trainprof.bench.config import ShapesConfig

    cfg = ShapesConfig(hidden=args.hidden, vocab=args.vocab, tokens=args.tokens, seq_len=args.seq_len,
                       dtype=args.dtype.lower() if args.dtype else None, ff_steps=args.ff_steps,
                       warmup=args.warmup, iters=args.iters, budget_s=args.budget_s).resolved(kind)
    return cfg, shapes.run, shapes.VERSION


CONFIGS = {"matmul": _matmul, "bandwidth": _bandwidth, "allreduce": _allreduce,
           "dataloader": _dataloader, "shapes": _shapes}


# --- the command -------------------------------------------------------------------------


def _out_dir(arg: str | None, kind: str, force: bool = False) -> Path:
    from trainprof import outdir

    if arg is None:
        return outdir.fresh_dir(f"bench-{kind}-{{stamp}}")

    return outdir.check_out(arg, force=force)  # a parent that is a file fails now, not after the bench


def bench(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from trainprof.backends import get_backend, resolve_device
    from trainprof.bench.contention import Contention
    from trainprof.bench.result import environment, envelope, write
    from trainprof.bench.tables import print_bench

    device = resolve_device(args.device)
    if args.kind == "allreduce":
        if int(os.environ.get("WORLD_SIZE", "1")) == 1:
            return _launch_allreduce(args, device)
        if device.startswith("cuda"):  # a rank of torchrun's job: its own GPU, never all on cuda:0
            device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
    backend = get_backend(device)
    cfg, run, version = CONFIGS[args.kind](args, backend.kind, device)
    if args.kind == "allreduce" and int(os.environ.get("RANK", "0")) != 0:
        run(cfg, backend, None)  # measures with the others; rank 0 writes and prints
        return 0
    out = _out_dir(args.out, args.kind, getattr(args, 'force', False))

    from trainprof.jobs.torchrun import STDERR_TTY_ENV

    # under our torchrun relaunch, stderr is a pipe to a terminal: the bar may still draw
    tty = True if os.environ.get(STDERR_TTY_ENV) == "1" else None
    bar = Progress(TextColumn(f"[bold]bench {args.kind}[/] {{task.description}}"), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True, force_terminal=tty), transient=True)
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

    with atomic.staged_dir(out, force=getattr(args, "force", False)) as stage:  # appears complete, with its manifest
        write(stage, record)
    path = out / "bench.json"
    if args.json:
        print(jsontext.dumps(record))
    else:
        con = Console()
        print_bench(record, con)
        con.print(visible(f"wrote {path}"), markup=False)  # a path is shown, never acted on
    return 0
