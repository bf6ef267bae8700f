"""Measure one training configuration's peak memory, each in a fresh child process.

A fresh process per configuration makes every peak that configuration's own (a CPU
process peak cannot be lowered again) and turns any out-of-memory, real or emulated,
into the end of one child: the parent goes on with the next configuration. Children fork
from a multiprocessing forkserver that has already imported torch and the trainer (and
paid FlopCounterMode's one-off imports), so a probe starts in ~0.1 s instead of ~2-3 s.
A configuration on several ranks (the ladder's FSDP rung) is one such probe per rank, joined
in one gloo process group (jobs/memory_ranks.py).

What a probe measures (`trainer.train`, the same loop as `trainprof run`, a few steps):

* CPU: resident memory. With glibc the child first sets the mmap threshold to 64 KiB
  (`mallopt(M_MMAP_THRESHOLD)`), so every tensor buffer is its own mapping and goes back
  to the OS when freed: RSS then follows live tensor bytes, as a GPU allocator's
  `max_memory_allocated` does. (glibc's default keeps freed activation memory resident
  and the tiny preset's peak reads ~20-30% higher.) It then warms up (thread pool), takes
  its *baseline*: the current RSS (interpreter + torch, ~300 MB). On Linux it then
  resets the kernel's high-water mark (`echo 5 > /proc/self/clear_refs`), so `VmHWM`
  afterwards is the peak of this configuration alone. Elsewhere it falls back to
  `ru_maxrss` (the backend's reading), whose baseline is the value before the run.
  With a limit, a watchdog thread samples the RSS every few ms and ends the child as
  soon as it passes baseline + limit: an emulated device's OOM, without waiting for the
  run (or the machine) to run out.
* CUDA: the caching allocator's peak (`max_memory_allocated`, through the backend),
  reset after the warm-up. A real OutOfMemoryError (`train()` reports it as a
  ResourceError) is an OOM; a limit below the device's memory is applied to the measured
  peak, as on CPU. (Capping the allocator itself, `set_per_process_memory_fraction`,
  would need a backend method: only backends/ touches CUDA.)
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the forkserver preloads the trainer; the parent needs the type only
    from trainprof.workload.config import TrainConfig

# What the forkserver imports once (the warm module also runs FlopCounterMode on the meta
# device: no threads, no device, no data).
PRELOAD = ["trainprof.jobs._probe_warm"]
WATCH_EVERY_S = 0.003
M_MMAP_THRESHOLD = -3  # glibc malloc.h
_CTX: Any = None


@dataclass(frozen=True)
class ProbeResult:
    config: TrainConfig
    """the configuration the probe ran (resolved)"""
    status: str
    """ok | oom (the configuration does not fit) | error (anything else)"""
    reason: str = ""
    peak_bytes: int | None = None
    """raw peak: process high-water RSS (CPU) or allocator peak (CUDA)"""
    baseline_bytes: int | None = None
    """what was resident before the model existed (CPU: interpreter + torch)"""
    peak_kind: str = ""
    """process_hwm (VmHWM since the baseline), process_rss (ru_maxrss) or cuda_allocator"""
    malloc: str = ""
    """CPU allocator policy during the probe: exact (glibc, 64 KiB mmap threshold) or default"""
    step_time_s: float | None = None
    """the last step's wall time (a few steps: not a benchmark)"""
    cpu_s: float | None = None
    """CPU time of the child (all threads), start to end"""
    wall_s: float = 0.0
    ranks_above_baseline_bytes: tuple[int | None, ...] = ()
    """on several ranks (jobs/memory_ranks.py): each rank's peak above its baseline"""

    @property
    def fits(self) -> bool:
        return self.status == "ok"

    @property
    def above_baseline_bytes(self) -> int | None:
        if self.peak_bytes is None or self.baseline_bytes is None:
            return None
        return self.peak_bytes - self.baseline_bytes


def _context() -> Any:
    global _CTX
    if _CTX is None:
        if "forkserver" in mp.get_all_start_methods():
            _CTX = mp.get_context("forkserver")
            _CTX.set_forkserver_preload(PRELOAD)
        else:  # Windows: a spawned child imports everything itself (slower, same numbers)
            _CTX = mp.get_context("spawn")
    return _CTX


def run_probe(config: TrainConfig, *, limit_bytes: int | None, timeout_s: float = 600.0) -> ProbeResult:
    """Run `config` (resolved, device explicit) in a child (jobs/trial.py:
    its own process group, dying with us); never raises for what the child does: OOM, a crash
    or a timeout come back as the result's status."""
    from trainprof.jobs.trial import run_function

    return probe_result(config, run_function(_child, (config, limit_bytes), timeout_s=timeout_s,
                                             context=_context()))


def probe_result(config: Any, out: Any) -> ProbeResult:
    """A child's outcome (jobs/trial.run_function) as a probe's result: its record, or a timeout,
    an OOM kill or a crash as the status (one rank's probe too: jobs/memory_ranks.py)."""
    if out.status == "ok":
        msg = out.record
    elif out.status == "timeout":
        msg = {"status": "error", "reason": out.reason}
    elif out.returncode == -9:
        msg = {"status": "oom", "reason": "killed by SIGKILL (the kernel's OOM killer?)"}
    else:
        msg = {"status": "error", "reason": f"probe process {out.reason}"}
    return ProbeResult(config=config, wall_s=out.wall_s, **msg)


# ---- the child -------------------------------------------------------------------------
def _child(conn: Any, config: TrainConfig, limit_bytes: int | None) -> None:
    lock = threading.Lock()

    def send(msg: dict[str, Any]) -> None:
        with lock:
            conn.send(msg)

    try:
        send({**_measure(config, limit_bytes, lock, conn), "cpu_s": time.process_time()})
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which decides
        from trainprof.errors import ResourceError

        if isinstance(e, ResourceError):  # train()'s translation of a real OOM, or its pre-flight
            send({"status": "oom", "reason": str(e)})
        else:
            send({"status": "error", "reason": f"{type(e).__name__}: {e}"})
    finally:
        conn.close()


def _measure(cfg: TrainConfig, limit_bytes: int | None, lock: threading.Lock, conn: Any) -> dict[str, Any]:
    import gc

    from trainprof.backends import get_backend
    from trainprof.hardware.peaks import PeakOverrides
    from trainprof.workload.trainer import train

    backend = get_backend(cfg.device)
    cuda = backend.kind == "cuda"
    malloc = "" if cuda else ("exact" if _exact_malloc() else "default")
    _warm_up(cfg, backend)
    gc.collect()
    if cuda:
        backend.reset_peak_memory()
        base = backend.peak_memory_bytes()[0]  # right after a reset: what is allocated now
        kind = "cuda_allocator"
    else:
        base = _rss_now()
        kind = "process_hwm" if base is not None and _reset_hwm() else "process_rss"
        if kind == "process_rss":
            base = backend.peak_memory_bytes()[0]
        if limit_bytes is not None and base is not None and _rss_now() is not None:
            _start_watchdog(base, limit_bytes, lock, conn, malloc)
    rec = train(cfg, backend=backend, peaks=PeakOverrides(peak_tflops=1.0))  # placeholder: no MFU here, no CPU peak benchmark
    if cuda:
        peak = backend.peak_memory_bytes()[0]
    elif kind == "process_hwm":
        peak = _status_kib("VmHWM")
    else:
        peak = backend.peak_memory_bytes()[0]
    status, reason = "ok", ""
    if limit_bytes is not None and peak is not None and base is not None and peak - base > limit_bytes:
        status, reason = "oom", f"peak {_mib(peak - base)} above the {_mib(limit_bytes)} limit (emulated)"
    return {"status": status, "reason": reason, "peak_bytes": peak, "baseline_bytes": base,
            "peak_kind": kind, "malloc": malloc, "step_time_s": rec.steps[-1].step_time_s if rec.steps else None}


def _exact_malloc() -> bool:
    """glibc: allocations ≥ 64 KiB each get their own mapping, unmapped on free. Setting the
    threshold explicitly also turns off glibc's dynamic threshold, which otherwise rises to
    the size of freed buffers and keeps later ones on the (never shrinking) heap."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return bool(ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, 64 << 10))
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False


def _warm_up(cfg: Any, backend: Any) -> None:
    """Two steps of a miniature of the same model code (dtype, attention, checkpointing,
    optimizer) before the baseline. A forked child starts without the parent's code pages
    (they fault in on first use) and without a thread pool or kernel caches; warming up
    here keeps those (~15 MB on CPU) out of the configuration's peak."""
    import contextlib

    import torch

    from trainprof.workload.config import ModelConfig
    from trainprof.workload.model import GPT
    from trainprof.workload.trainer import AMP, make_optimizer

    import torch.distributed as dist

    from trainprof.workload import parallel

    mini = ModelConfig(n_layer=1, n_head=2, d_model=32, vocab_size=64, context_len=16)
    model = GPT(mini, attention=cfg.attention, checkpointing=cfg.activation_checkpointing,
                recompute=cfg.recompute).to(cfg.device)
    wrapped = model
    if dist.is_available() and dist.is_initialized():  # a rank (jobs/memory_ranks.py): its wrapper's code too
        info = parallel.DistInfo(dist.get_rank(), dist.get_rank(), dist.get_world_size(), "gloo")
        wrapped = parallel.wrap(model, cfg.strategy, info, cfg.device)
    opt = make_optimizer(model, cfg)
    dev = cfg.device.split(":")[0]
    amp = torch.autocast(device_type=dev, dtype=AMP[cfg.dtype]) if cfg.dtype in AMP else contextlib.nullcontext()
    x = torch.randint(0, 64, (2, 16), device=cfg.device)
    for _ in range(2):
        with amp:
            loss = wrapped(x, x)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    backend.synchronize()
    del model, wrapped, opt, loss, x


def _start_watchdog(base: int, limit: int, lock: threading.Lock, conn: Any, malloc: str) -> None:
    def watch() -> None:
        while True:
            rss = _rss_now()
            # an emulated device OOM: report and end the process at once, like a real one
            if rss is not None and rss - base > limit and lock.acquire(timeout=1.0):
                try:
                    conn.send({"status": "oom", "peak_bytes": max(rss, _status_kib("VmHWM") or 0),
                               "baseline_bytes": base, "peak_kind": "process_hwm", "malloc": malloc,
                               "reason": f"RSS passed the {_mib(limit)} limit (emulated; stopped early)"})
                    conn.close()
                finally:
                    os._exit(0)
            time.sleep(WATCH_EVERY_S)

    threading.Thread(target=watch, name="trainprof-memory-watchdog", daemon=True).start()


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


# ---- Linux process memory ----------------------------------------------------------------
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss_now() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _status_kib(field: str) -> int | None:
    from trainprof.backends.cpu import proc_kib

    return proc_kib("/proc/self/status", field)


def _reset_hwm() -> bool:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0, `proc(5)` clear_refs value 5)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return _status_kib("VmHWM") is not None

