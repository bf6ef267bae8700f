"""`bench allreduce`: collective time, algbw and busbw over the ranks of a torchrun job.

The ranks are real `torch.distributed` processes started by torchrun: `trainprof bench
allreduce --nproc N` relaunches itself under `python -m torch.distributed.run` (jobs/torchrun.py),
and the same command runs unchanged under the user's own torchrun on several nodes. Each
rank runs `run()`: the process group from torchrun's environment (env://), NCCL with one GPU
per rank (cuda:LOCAL_RANK), gloo on CPU. Per message size: warm-up collectives, a barrier,
then `iters` back-to-back collectives timed on the host between two device synchronisations;
the time is the mean per collective, averaged over the ranks — all as nccl-tests' BenchTime
does (src/common.cu: a barrier, a host timer around the loop, completeColl,
`Allreduce(args, &deltaSec, average)`). The slowest rank's time is kept beside it
(`time_max_s`). Bandwidths: busbw.py.
"""

from __future__ import annotations

import os
import resource
import socket
import zlib
from datetime import timedelta
from typing import Any, Callable

from trainprof.bench import Progress
from trainprof.hardware.references import link, link_fraction
from trainprof.bench.busbw import algbw, bus_factor, busbw, message_elems
from trainprof.bench.config import CollectiveConfig
from trainprof.bench.parse import human_bytes
from trainprof.bounded import env_int
from trainprof.errors import UsageError
from trainprof.vocab import collectives as cv

VERSION = 1
ELEM_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


def cases(cfg: CollectiveConfig) -> list[tuple[str, int]]:
    return [(op, size) for op in cfg.ops for size in cfg.sizes]


def check(cfg: CollectiveConfig, device: str) -> None:
    """What the launcher can check before any rank starts: message sizes, one GPU per rank."""
    if device.startswith("cuda"):
        _check_gpus(cfg.nproc)
    for op, size in cases(cfg):
        message_elems(op, size, cfg.nproc, ELEM_BYTES[cfg.dtype])  # too small → UsageError now


def run(cfg: CollectiveConfig, device: str, progress: Progress | None = None) -> dict[str, Any]:
    """This rank's part of the job (torchrun's environment: WORLD_SIZE = cfg.nproc ≥ 2).
    Every rank returns the same rows; rank 0 writes them. `peer_cpu_s`: CPU seconds the
    other ranks on rank 0's machine used while measuring (not bench.json: cli/bench.py
    takes it out of `others_cpu_share`, which is about processes outside the job)."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    for op, size in cases(cfg):
        message_elems(op, size, cfg.nproc, ELEM_BYTES[cfg.dtype])
    rows, peer_cpu_s = rank_main(cfg, kind, progress)
    lk, basis = link(cfg.link), "given by --link"
    if lk is None and kind == "cuda":  # none named: the GPUs' topology and the device's row (backends/gpu_topo.py)
        from trainprof.backends.gpu_topo import cuda_link

        lk, basis = cuda_link()
    if lk is not None:  # busbw is per direction, as the link's figure (hardware/references.toml)
        rows = [{**r, "link_pct": 100.0 * link_fraction(r["busbw_gbs"], lk)} for r in rows]
    return {"results": rows, "link": None if lk is None else {"key": lk.key, "name": lk.name, "gbs": lk.gbs,
                                                               "source": lk.source, "basis": basis},
            **({"link_note": basis} if lk is None and kind == "cuda" else {}),
            "world_size": cfg.nproc, "backend": "nccl" if kind == "cuda" else "gloo",
            "bus_factors": {op: bus_factor(op, cfg.nproc) for op in cfg.ops}, "peer_cpu_s": peer_cpu_s}


def _check_gpus(nproc: int) -> None:
    from trainprof.backends import resolve_device

    try:
        resolve_device(f"cuda:{nproc - 1}")
    except UsageError:
        raise UsageError(f"--nproc {nproc}: one GPU per rank, and this machine has fewer "
                         f"(use --device cpu for gloo ranks on CPU)") from None


# --- inside each rank -------------------------------------------------------------------


def rank_main(cfg: CollectiveConfig, kind: str,
              progress: Progress | None = None) -> tuple[list[dict[str, Any]], float]:
    """Join torchrun's process group and measure every case; (rows, peer_cpu_s)."""
    import torch
    import torch.distributed as dist

    from trainprof.backends import get_backend
    from trainprof.backends.distributed import end_process_group

    local_rank = env_int("LOCAL_RANK", 0)
    local_world = env_int("LOCAL_WORLD_SIZE", env_int("WORLD_SIZE", 1))
    backend = get_backend("cpu" if kind == "cpu" else f"cuda:{local_rank}")
    if kind == "cpu":
        # gloo moves bytes with its own threads; intra-op threads would only contend.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world))
    # device_id binds NCCL to this rank's GPU up front (barriers then know the device).
    dev_id = torch.device(backend.device) if kind == "cuda" else None
    dist.init_process_group("nccl" if kind == "cuda" else "gloo", timeout=timedelta(seconds=cfg.timeout_s),
                            device_id=dev_id)
    try:
        rank, n = dist.get_rank(), dist.get_world_size()
        if n != cfg.nproc:
            raise UsageError(f"bench allreduce: configured for {cfg.nproc} ranks, torchrun started {n}")
        cpu0 = _cpu_s()
        rows = []
        todo = cases(cfg)
        for i, (op, size) in enumerate(todo):
            if progress is not None:
                progress(i, len(todo), f"{op} {human_bytes(size)} × {n} ranks")
            fn, s_bytes = _collective(op, size, n, cfg.dtype, backend.device)
            seconds = _time_collective(fn, backend, cfg.warmup, cfg.iters)
            mean = torch.tensor([seconds], dtype=torch.float64, device=backend.device)
            slowest = mean.clone()
            dist.all_reduce(mean, op=dist.ReduceOp.SUM)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            t = float(mean.item()) / n
            rows.append({"op": op, "bytes": s_bytes, "dtype": cfg.dtype, "ranks": n,
                         "iters": cfg.iters, "time_s": t, "time_max_s": float(slowest.item()),
                         "algbw_gbs": algbw(s_bytes, t) / 1e9,
                         "busbw_gbs": busbw(op, n, s_bytes, t) / 1e9})
        # The other ranks on rank 0's machine are part of the job, not contention.
        me = zlib.crc32(socket.gethostname().encode())
        host = torch.tensor([me], dtype=torch.int64, device=backend.device)
        dist.broadcast(host, src=0)
        near = rank != 0 and int(host.item()) == me
        peers = torch.tensor([_cpu_s() - cpu0 if near else 0.0], dtype=torch.float64, device=backend.device)
        dist.all_reduce(peers, op=dist.ReduceOp.SUM)
        return rows, float(peers.item())
    finally:
        end_process_group()


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _collective(op: str, size: int, n: int, dtype: str, device: str) -> tuple[Callable[[], Any], int]:
    import torch
    import torch.distributed as dist

    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    n_in, n_out, s_bytes = message_elems(op, size, n, ELEM_BYTES[dtype])
    # zeros: repeated sums of zeros stay zero (ones would overflow fp16 within 16 rounds).
    x = torch.zeros(n_in, dtype=tdtype, device=device)
    y = torch.empty(n_out, dtype=tdtype, device=device)
    if op == cv.ALL_REDUCE:
        return (lambda: dist.all_reduce(x)), s_bytes
    if op == cv.ALL_GATHER:
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
