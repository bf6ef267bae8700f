"""`bench allreduce`: collective time, algbw and busbw over `--nproc` ranks.

The ranks are real `torch.distributed` processes (NCCL on GPUs, one GPU per rank; gloo on
CPU) started by launch.run_ranks. Per message size: warm-up collectives, a barrier, then
`iters` back-to-back collectives timed on the host between two device synchronisations;
the time is the mean per collective, averaged over the ranks — all as nccl-tests'
BenchTime does (src/common.cu: a barrier, a host timer around the loop, completeColl,
`Allreduce(args, &deltaSec, average)`). The slowest rank's time is kept beside it
(`time_max_s`). Bandwidths: busbw.py.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

from trainprof.bench import Progress
from trainprof.bench.busbw import algbw, bus_factor, busbw, message_elems
from trainprof.bench.config import CollectiveConfig
from trainprof.bench.launch import RankFailed, check_port, free_port, port_busy_message, run_ranks
from trainprof.bench.parse import human_bytes
from trainprof.errors import UsageError

VERSION = 1
ELEM_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


@dataclass(frozen=True)
class World:
    """What every rank needs to join the job (picklable: it crosses the spawn)."""

    nproc: int
    pg_backend: str  # "gloo" | "nccl"
    device_kind: str  # "cpu" | "cuda"
    init_method: str  # tcp://addr:port, rank 0 hosts the store
    rows_path: str  # rank 0 appends one JSON line per measured size


def cases(cfg: CollectiveConfig) -> list[tuple[str, int]]:
    return [(op, size) for op in cfg.ops for size in cfg.sizes]


def run(cfg: CollectiveConfig, device: str, progress: Progress | None = None) -> dict[str, Any]:
    kind = "cuda" if device.startswith("cuda") else "cpu"
    if kind == "cuda":
        _check_gpus(cfg.nproc)
    for op, size in cases(cfg):
        message_elems(op, size, cfg.nproc, ELEM_BYTES[cfg.dtype])  # too small → UsageError now
    addr = cfg.master_addr
    if cfg.master_port:
        check_port(addr, cfg.master_port)
        port = cfg.master_port
    else:
        port = free_port(addr)
    todo = cases(cfg)
    with tempfile.TemporaryDirectory(prefix="trainprof-bench-") as tmp:
        world = World(cfg.nproc, "nccl" if kind == "cuda" else "gloo", kind,
                      f"tcp://{addr}:{port}", str(Path(tmp) / "rows.jsonl"))
        tail = _Tail(world.rows_path)

        def tick() -> None:
            tail.poll()
            if progress and len(tail.rows) < len(todo):
                op, size = todo[len(tail.rows)]
                progress(len(tail.rows), len(todo), f"{op} {human_bytes(size)} × {cfg.nproc} ranks")

        try:
            run_ranks(rank_main, cfg.nproc, (cfg, world), timeout_s=cfg.timeout_s, on_tick=tick)
        except RankFailed as e:
            if "address already in use" in e.detail.lower() or "eaddrinuse" in e.detail.lower():
                raise UsageError(port_busy_message(addr, port)) from None
            raise
        tail.poll()
        rows = tail.rows
    return {"results": rows, "world_size": cfg.nproc, "backend": world.pg_backend,
            "bus_factors": {op: bus_factor(op, cfg.nproc) for op in cfg.ops}}


def _check_gpus(nproc: int) -> None:
    from trainprof.backends import resolve_device

    try:
        resolve_device(f"cuda:{nproc - 1}")
    except UsageError:
        raise UsageError(f"--nproc {nproc}: one GPU per rank, and this machine has fewer "
                         f"(use --device cpu for gloo ranks on CPU)") from None


class _Tail:
    """Reads the complete lines rank 0 has appended so far."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.rows: list[dict[str, Any]] = []
        self._pos = 0

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._pos)
                data = f.read()
        except FileNotFoundError:
            return
        done = data.rfind(b"\n") + 1  # only whole lines: rank 0 may be mid-write
        for line in data[:done].splitlines():
            self.rows.append(json.loads(line))
        self._pos += done


# --- inside each rank -------------------------------------------------------------------


def rank_main(rank: int, cfg: CollectiveConfig, world: World) -> None:
    import torch
    import torch.distributed as dist

    from trainprof.backends import get_backend

    backend = get_backend("cpu" if world.device_kind == "cpu" else f"cuda:{rank}")
    if world.device_kind == "cpu":
        # gloo moves bytes with its own threads; intra-op threads would only contend.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world.nproc))
    # device_id binds NCCL to this rank's GPU up front (barriers then know the device).
    dev_id = torch.device(backend.device) if world.device_kind == "cuda" else None
    dist.init_process_group(world.pg_backend, init_method=world.init_method, rank=rank,
                            world_size=world.nproc, timeout=timedelta(seconds=cfg.timeout_s),
                            device_id=dev_id)
    try:
        for op, size in cases(cfg):
            fn, s_bytes = _collective(op, size, world.nproc, cfg.dtype, backend.device)
            seconds = _time_collective(fn, backend, cfg.warmup, cfg.iters)
            mean = torch.tensor([seconds], dtype=torch.float64, device=backend.device)
            slowest = mean.clone()
            dist.all_reduce(mean, op=dist.ReduceOp.SUM)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            t = float(mean.item()) / world.nproc
            if rank == 0:
                row = {"op": op, "bytes": s_bytes, "dtype": cfg.dtype, "ranks": world.nproc,
                       "iters": cfg.iters, "time_s": t, "time_max_s": float(slowest.item()),
                       "algbw_gbs": algbw(s_bytes, t) / 1e9,
                       "busbw_gbs": busbw(op, world.nproc, s_bytes, t) / 1e9}
                with open(world.rows_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")
    finally:
        dist.destroy_process_group()


def _collective(op: str, size: int, n: int, dtype: str, device: str) -> tuple[Callable[[], Any], int]:
    import torch
    import torch.distributed as dist

    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    n_in, n_out, s_bytes = message_elems(op, size, n, ELEM_BYTES[dtype])
    # zeros: repeated sums of zeros stay zero (ones would overflow fp16 within 16 rounds).
    x = torch.zeros(n_in, dtype=tdtype, device=device)
    y = torch.empty(n_out, dtype=tdtype, device=device)
    if op == "all_reduce":
        return (lambda: dist.all_reduce(x)), s_bytes
    if op == "all_gather":
        # all_gather_single is the newer name (all_gather_into_tensor warns as deprecated).
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        return (lambda: gather(y, x)), s_bytes
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    return (lambda: scatter(y, x)), s_bytes


def _time_collective(fn: Callable[[], Any], backend: Any, warmup: int, iters: int) -> float:
    import torch.distributed as dist

    for _ in range(warmup):
        fn()
    backend.synchronize()
    dist.barrier()  # start together, or the first rank's time includes waiting for the last
    t0 = backend.host_clock()
    for _ in range(iters):
        fn()
    backend.synchronize()
    return (backend.host_clock() - t0) / iters
