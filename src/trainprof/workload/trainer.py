"""The reference training loop, measured by a `Monitor`: what `trainprof run` executes.

Read top to bottom like nanoGPT's train.py: `train` prepares the run (workload/setup.py),
places the model on its device, runs the measured steps (workload/step.py: one optimizer
step, phase by phase), the extra steps that profile or snapshot memory, validation, and
returns the run record.
"""

from __future__ import annotations

import contextlib
import gc
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import msgspec
import torch

from trainprof.backends import DeviceBackend
from trainprof.bounded import env_int
from trainprof.collect.monitor import Monitor
from trainprof.collect.profiler import ProfileConfig, StepProfiler
from trainprof.collect.run_journal import RunJournal
from trainprof.errors import ResourceError
from trainprof.hardware.overrides import PeakOverrides
from trainprof.options import MonitorOptions
from trainprof.recordtypes.base import as_struct
from trainprof.recordtypes.run import Layout, RunRecord, StepRecord
from trainprof.recordtypes.run_parts import Distributed, MemorySnapshot
from trainprof.workload import affinity, checkpoint, mesh, parallel
from trainprof.workload.config import TrainConfig
from trainprof.workload.data import make_loader
from trainprof.workload.setup import (AMP, Session, count_model_flops, make_optimizer, place, prepare,
                                      process_settings, resolve_dtype)
from trainprof.workload.step import Phase, lr_at, make_step

__all__ = ["AMP", "count_model_flops", "environment", "evaluate", "lr_at", "make_optimizer", "resolve_dtype",
           "train"]


@process_settings()
def train(
    cfg: TrainConfig,
    *,
    backend: DeviceBackend | None = None,
    peaks: PeakOverrides = PeakOverrides(),
    on_step: Callable[[StepRecord], None] | None = None,
    monitor: MonitorOptions | None = None,
    trace: str | None = None,
    trace_path: Path | None = None,
    run_dir: Path | None = None,
    resume: bool = False,
    resume_anyway: bool = False,
    memory_snapshot_steps: int = 0,
    stop_at: float | None = None,
) -> RunRecord:
    """Train `cfg` (already `.resolved()`), measuring every step; return the run record.

    With `run_dir`, the run journals its events there (collect/run_journal.py) and, with
    `cfg.checkpoint_every`, checkpoints; `resume` continues from the checkpoint in `run_dir`.

    `monitor` (options.MonitorOptions: the command's trace and sampler options, one object from
    the flags down; None: neither). With `trace` ("torch", "nsys"), `monitor.profile_steps` more
    steps (and the profiler's start-up ones) run under that tool after the measured ones (not
    in the summary) and the trace is written to `trace_path`. With `monitor.system_interval`, a
    background thread samples CPU/GPU utilisation, memory, IO and power (collect/sampler.py) on
    the first rank of each machine; run.json's "system".

    With `memory_snapshot_steps` (CUDA), that many more steps run with allocation history
    on; the snapshot goes to `run_dir` and its summary to run.json's "memory_snapshot".
    """
    profile = ProfileConfig.of(monitor, trace) if monitor is not None and trace is not None else None
    if profile is not None and trace_path is None:
        raise ValueError("profile needs a trace_path")
    s = prepare(cfg, backend, run_dir, resume, resume_anyway)
    try:
        extra = (profile.total_steps if profile is not None else 0) + memory_snapshot_steps
        place(s, peaks=peaks, on_step=on_step, monitor=monitor, run_dir=run_dir, resume=resume, extra_steps=extra)
        one_step = make_step(s)
        stop = None if stop_at is None or s.dist is not None else \
            StopAt(stop_at, tail_steps(cfg, profile, memory_snapshot_steps))
        run_measured(s, one_step, run_dir, stop)
        snapshot = run_extras(s, one_step, profile, trace_path, memory_snapshot_steps, run_dir)
        val_loss = validate(s)
    except Exception as e:  # noqa: BLE001 - only OOM is translated; the rest re-raises
        if s.backend.is_out_of_memory(e):
            raise _oom_error(s.cfg, s.device) from None
        raise
    rec = finish(s, val_loss, snapshot)
    ran = len(rec.steps)
    if stop is not None and ran < cfg.steps:
        rec = msgspec.structs.replace(rec, warnings=[*rec.warnings, f"stopped after {ran} of {cfg.steps} steps: the next one would "
                                     "have ended after --stop-at (the study's or tune's deadline)"])
    return rec


# What follows the measured steps, in plain steps: each profiler step (wait, warm-up, active)
# ~1.3 (measured: the 3 steps of a 1-step profile took 9.2 s at a 3.1 s median step, tiny
# preset, CPU under load, i.e. 1.0 each; 1.3 leaves room for a bigger active share), a
# validation batch ~0.35 (forward only: 4 batches took 2.8 s there, 0.23 each), a snapshot step 1.
PROFILED_STEP_COST, EVAL_BATCH_COST = 1.3, 0.35


def tail_steps(cfg: TrainConfig, profile: ProfileConfig | None, snapshot_steps: int) -> float:
    return (PROFILED_STEP_COST * (profile.total_steps if profile is not None else 0)
            + EVAL_BATCH_COST * cfg.eval_batches + snapshot_steps)


@dataclass(frozen=True)
class StopAt:
    """Stop the measured steps once the next one, then `tail` more, would end after `at`
    (time.time()); never before the warm-up and one measured step (a summary needs one)."""

    at: float
    tail: float

    def now(self, done: list[StepRecord], warmup: int, clock: Callable[[], float] = time.time) -> bool:
        if len(done) < warmup + 1:
            return False
        recent = sorted(r.step_time_s for r in done[-5:])
        step = recent[len(recent) // 2]  # the median of the last five: one slow step does not stop the run
        return clock() + step * (1.0 + self.tail) > self.at


def run_measured(s: Session, one_step: Callable[[int, Phase], torch.Tensor], run_dir: Path | None,
                 stop: StopAt | None = None) -> None:
    """The measured steps, each inside the Monitor; journal events and checkpoints between;
    with `stop`, fewer when the deadline comes first."""
    cfg, mon, journal = s.cfg, s.mon, s.journal
    if cfg.gc_disable:
        gc.collect()
        gc.disable()  # a gen-2 collection can stall a step for tens of ms at random
    if s.resumed_rng is not None:
        checkpoint.set_rng_state(s.resumed_rng)
    try:
        for step in range(s.first, cfg.steps):
            with mon.step() as st:
                st.loss = one_step(step, st.phase)
            if journal:
                journal.event("step", step=step, step_time_s=mon.steps[-1].step_time_s)
            if cfg.checkpoint_every and (step + 1) % cfg.checkpoint_every == 0 and run_dir is not None:
                _save_checkpoint(run_dir, step + 1, s.model, s.opt, s.scaler, mon, journal, s.dist, s.run_config)
            if cfg.gc_disable and step % 100 == 99:
                gc.collect()
            if stop is not None and step + 1 < cfg.steps and stop.now(mon.steps, cfg.warmup_steps):
                break
    finally:
        if cfg.gc_disable:
            gc.enable()


def run_extras(s: Session, one_step: Callable[[int, Phase], torch.Tensor], profile: ProfileConfig | None,
               trace_path: Path | None, memory_snapshot_steps: int, run_dir: Path | None) -> dict | None:
    """Steps after the measured ones, not in the summary: profiled (torch.profiler or Nsight
    Systems), then with CUDA allocation history for a memory snapshot. Returns its summary."""
    cfg = s.cfg
    if profile is not None and profile.tool == "nsys":
        _nsys_steps(one_step, cfg.steps, profile, s.backend)
    elif profile is not None:
        meta = {"trainprof_mesh": mesh.metadata(s.layout, s.job.threads)} if s.job is not None else None
        _profiled_steps(one_step, cfg.steps, profile, s.device, trace_path, meta)
    if not memory_snapshot_steps:
        return None
    from trainprof.collect.memory_snapshot import snapshot_steps

    first_snap = cfg.steps + (profile.total_steps if profile is not None else 0)

    def run_steps() -> None:
        for i in range(memory_snapshot_steps):
            one_step(first_snap + i, lambda _name: contextlib.nullcontext()).item()

    return snapshot_steps(run_steps, s.backend, run_dir)


def validate(s: Session) -> float | None:
    """Validation loss on held-out batches (the mean over ranks in a job)."""
    cfg, dist, device = s.cfg, s.dist, s.device
    s.batches = s.loader = None  # stop persistent workers before evaluation
    if s.job is not None and s.job.schedule is not None:
        return None  # a stage cannot evaluate alone (the run says so: finish)
    val_loader = make_loader(s.corpus.val, seq_len=cfg.seq_len, micro_batch=cfg.micro_batch,
                             n_batches=cfg.eval_batches, seed=cfg.seed + 1, dist=s.data_dist)
    t0 = time.perf_counter()
    val_loss = evaluate(s.step_model, val_loader, device, s.amp) if cfg.eval_batches else None
    if s.journal and cfg.eval_batches:
        s.journal.event("eval", duration_s=time.perf_counter() - t0)
    if dist and val_loss is not None:  # each rank saw a slice of the same global batches
        val_loss = float(parallel.mean_across_ranks(torch.tensor(val_loss, device=device)))
    return val_loss


def finish(s: Session, val_loss: float | None, snapshot: dict | None) -> RunRecord:
    """The run record: the Monitor's steps and summary, the model, config and environment."""
    cfg, dist = s.cfg, s.dist
    if s.journal:
        s.journal.event("end", steps=cfg.steps)
    m = cfg.model
    replicas = s.layout.dp if s.layout is not None else dist.world_size if dist else 1
    distributed = _job_summary(s.mon, cfg, dist, s.binding, replicas) if dist else None
    if dist:
        parallel.finish()
    rec = s.mon.record(
        model={"preset": cfg.preset, "params": s.params, "params_non_embedding": s.model.num_params(True),
               "n_layer": m.n_layer, "n_head": m.n_head, "d_model": m.d_model,
               "vocab_size": m.vocab_size, "context_len": m.context_len},
        config={**cfg.to_dict(), "corpus": s.corpus.source, "corpus_bytes": s.corpus.n_bytes},
        val_loss=val_loss,
        flops=s.flops,
        environment={**environment(), **affinity.environment(s.binding)},
        world_size=dist.world_size if dist else 1,
        # the node's GPUs (all sampled by its local rank 0) did all of its ranks' tokens
        # (a replica's tp·pp ranks share its tokens)
        tokens_scale=max(1, env_int("LOCAL_WORLD_SIZE", dist.world_size) * replicas // dist.world_size) if dist else 1,
    )
    return msgspec.structs.replace(rec, distributed=as_struct(distributed, Distributed),
                                   memory_snapshot=as_struct(snapshot, MemorySnapshot),
                                   layout=_layout_record(s), warnings=[*rec.warnings, *_layout_warnings(s)])


def _layout_record(s: Session) -> Layout | None:
    if s.dist is None:
        return None
    lay = s.layout
    if lay is None:
        return Layout(dp=s.dist.world_size, tp=1, pp=1, strategy=s.cfg.strategy)
    staged = lay.pp > 1
    return Layout(dp=lay.dp, tp=lay.tp, pp=lay.pp, strategy=s.cfg.strategy,
                  schedule=lay.schedule if staged else None, microbatches=lay.microbatches if staged else None)


def _layout_warnings(s: Session) -> list[str]:
    out = []
    if s.job is not None and s.job.schedule is not None and s.cfg.eval_batches:
        out.append("no validation loss under --pp: a stage cannot evaluate alone")
    return out


def _oom_error(cfg: TrainConfig, device: str) -> ResourceError:
    return ResourceError(
        f"--micro-batch {cfg.micro_batch} does not fit in {device} memory ({cfg.preset}, "
        f"seq {cfg.seq_len}, {cfg.dtype}); use a smaller --micro-batch with --grad-accum, "
        "--activation-checkpointing or --dtype bf16"
    )


@torch.no_grad()
def evaluate(model: torch.nn.Module, loader: Any, device: str, amp: Any) -> float | None:
    model.eval()
    losses = []
    for x, y in loader:
        with amp:
            losses.append(float(model(x.to(device), y.to(device))))
    model.train()
    return sum(losses) / len(losses) if losses else None


def _job_summary(mon: Monitor, cfg: TrainConfig, dist: parallel.DistInfo,
                 binding: dict[str, Any] | None = None, replicas: int | None = None) -> dict[str, Any]:
    """Per-rank step times gathered on every rank; the slowest rank is the straggler.

    Every rank runs the same steps in lockstep (each step ends in collectives), so the job's
    step time is the slowest rank's and its throughput is `replicas` (data-parallel replicas:
    world_size under DDP/FSDP, dp under a layout) × one rank's tokens."""
    replicas = replicas or dist.world_size
    from trainprof.analysis.run.throughput import straggler

    s = mon.summary()
    mine = {"rank": dist.rank, "step_time_s": s.step_time_s, "step_time_median_s": s.step_time_median_s,
            "forward_s": s.forward_s, "backward_s": s.backward_s, "optimizer_s": s.optimizer_s,
            "data_s": s.data_s, **affinity.environment(binding)}
    ranks = parallel.gather(mine)
    slow, excess_pct = straggler({r["rank"]: r["step_time_s"] for r in ranks})
    return {
        "world_size": dist.world_size, "strategy": cfg.strategy, "backend": dist.backend,
        "global_batch_tokens": cfg.tokens_per_step * replicas,
        "job_tokens_per_s": s.tokens_per_s * replicas,
        "per_rank": ranks,
        "straggler_rank": slow,
        "straggler_excess_pct": excess_pct,
    }


def _save_checkpoint(run_dir: Path, step: int, model: Any, opt: Any, scaler: Any, mon: Monitor,
                     journal: RunJournal | None, dist: Any, config: dict | None = None) -> None:
    if dist is not None and not dist.is_main:
        return  # DDP replicas are identical: rank 0 saves (FSDP shards would need every rank)
    t0 = time.perf_counter()
    checkpoint.save(run_dir, step=step, model=model, optimizer=opt, scaler=scaler,
                    steps_done=[msgspec.to_builtins(r) for r in mon.steps], config=config)
    if journal:
        journal.event("checkpoint_save", step=step, duration_s=time.perf_counter() - t0)


def _profiled_steps(one_step: Callable[..., torch.Tensor], first: int, profile: ProfileConfig,
                    device: str, trace_path: Path | None, metadata: dict[str, str] | None = None) -> None:
    """Run the profiled steps; each phase is a `trainprof.<phase>` range in the trace, so
    trace analysis can tell data waits from model work without guessing."""
    from torch.profiler import record_function

    def phase(name: str) -> Any:
        return record_function(f"trainprof.{name}")

    assert trace_path is not None
    p = StepProfiler(profile, device, trace_path, first_step=first, metadata=metadata)
    with p.running():
        for i in range(profile.total_steps):
            one_step(first + i, phase).item()  # the same per-step sync as measured steps
            p.step()


def _nsys_steps(one_step: Callable[..., torch.Tensor], first: int, profile: ProfileConfig,
                backend: DeviceBackend) -> None:
    """The profiled steps for Nsight Systems: the same schedule as torch.profiler's (two
    uncaptured steps, then `active` captured ones inside cudaProfilerStart/Stop and an NVTX
    range `trainprof.profile`); phases are NVTX ranges as in measured steps."""
    from trainprof.collect.profiler import WAIT, WARMUP
    from trainprof.collect.timers import nvtx

    def phase(name: str) -> Any:
        return nvtx(backend, f"trainprof.{name}")

    for i in range(WAIT + WARMUP):
        one_step(first + i, phase).item()
    with backend.cuda_profiler_capture(), nvtx(backend, "trainprof.profile"):
        for i in range(profile.active):
            with nvtx(backend, "trainprof.step"):
                one_step(first + WAIT + WARMUP + i, phase).item()


def environment() -> dict[str, Any]:
    """Versions only: never environment variables, paths or host names."""
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "python": platform.python_version(),
        "platform": platform.system().lower(),
        "cpu_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),  # the machine's cores: load average above it means a queue (docs/rules.md)
    }
