"""The reference training loop, measured by a `Monitor`: what `trainprof run` executes."""

from __future__ import annotations

import contextlib
import gc
import math
import os
import platform
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Callable

import torch

from trainprof.analysis.flops import gpt_matmul_params, gpt_recompute_flops_per_token, gpt_train_flops_per_token
from trainprof.analysis.memory import estimate_train_bytes
from trainprof.backends import DeviceBackend, cuda_state, get_backend, resolve_device
from trainprof.collect.flops import count_flops
from trainprof.collect.profiler import ProfileConfig, StepProfiler
from trainprof.collect.run_journal import RunJournal
from trainprof.errors import ResourceError, UsageError
from trainprof.hardware.peaks import PeakOverrides
from trainprof.collect.monitor import Monitor
from trainprof.records import RunRecord, StepRecord
from trainprof.workload import affinity, checkpoint, parallel
from trainprof.workload.resume import check as resume_check
from trainprof.workload.config import TrainConfig
from trainprof.workload.data import load_corpus, make_loader
from trainprof.workload.model import GPT

AMP = {"bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_dtype(cfg: TrainConfig, device: str) -> str:
    if cfg.dtype != "auto":
        return cfg.dtype
    if cuda_state.supports_bf16(device):
        return "bf16"
    return "fp32"


def count_model_flops(cfg: TrainConfig) -> dict[str, Any]:
    """FLOPs per optimizer step, counted on the meta device (free) and by formula.

    `model` FLOPs are counted without checkpointing (what the maths needs, for MFU);
    `hardware` FLOPs with the run's checkpointing, so the recomputed forward is included
    (for HFU). Both scale by gradient accumulation.
    """
    m = cfg.model
    assert cfg.micro_batch and cfg.seq_len

    def one(checkpointing: bool) -> tuple[int, dict[str, int]]:
        with torch.device("meta"):
            model = GPT(m, attention=cfg.attention, checkpointing=checkpointing)
            x = torch.zeros(cfg.micro_batch, cfg.seq_len, dtype=torch.long)
        return count_flops(lambda: model(x, x).backward())

    model_flops, per_op = one(False)
    hw_flops = one(True)[0] if cfg.activation_checkpointing else model_flops
    n_mm = gpt_matmul_params(m.n_layer, m.d_model, m.vocab_size, m.mlp_ratio)
    per_tok = gpt_train_flops_per_token(n_mm, m.n_layer, m.d_model, cfg.seq_len)
    recompute = (gpt_recompute_flops_per_token(m.n_layer, m.d_model, cfg.seq_len, m.mlp_ratio)
                 if cfg.activation_checkpointing else 0)
    tokens = cfg.micro_batch * cfg.seq_len
    return {
        "method": "torch.utils.flop_counter.FlopCounterMode on the meta device",
        "attention_convention": "full T×T score matrix, no causal saving (PaLM App. B, nanoGPT)",
        "model_flops_per_step": model_flops * cfg.grad_accum,
        "hardware_flops_per_step": hw_flops * cfg.grad_accum,
        "analytic_flops_per_step": per_tok * tokens * cfg.grad_accum,
        "analytic_hardware_flops_per_step": (per_tok + recompute) * tokens * cfg.grad_accum,
        "analytic_formula": "6N + 12·L·d·T per token, N = matmul weights incl. tied head",
        "per_op_per_micro_batch": per_op,
    }


def _preflight_memory(cfg: TrainConfig, backend: DeviceBackend, dtype: str, params: int) -> None:
    if backend.kind != "cpu":
        return  # on CUDA the real OutOfMemoryError is caught and explained instead
    m = cfg.model
    need = estimate_train_bytes(
        params=params, n_layer=m.n_layer, n_head=m.n_head, d_model=m.d_model,
        vocab_size=m.vocab_size, micro_batch=cfg.micro_batch, seq_len=cfg.seq_len,
        activation_bytes=2 if dtype in AMP else 4,
        materialised_scores=cfg.attention == "manual",
        checkpointing=cfg.activation_checkpointing,
    )
    avail = backend.available_memory_bytes()
    if avail is not None and need > avail:
        raise ResourceError(
            f"--micro-batch {cfg.micro_batch}: {cfg.preset} at seq {cfg.seq_len} needs about "
            f"{need / 2**30:.1f} GiB but {avail / 2**30:.1f} GiB is available; use a smaller "
            "--micro-batch with --grad-accum, --activation-checkpointing or --dtype bf16"
        )


def _oom_error(cfg: TrainConfig, device: str) -> ResourceError:
    return ResourceError(
        f"--micro-batch {cfg.micro_batch} does not fit in {device} memory ({cfg.preset}, "
        f"seq {cfg.seq_len}, {cfg.dtype}); use a smaller --micro-batch with --grad-accum, "
        "--activation-checkpointing or --dtype bf16"
    )


def lr_at(step: int, total: int, peak: float) -> float:
    """Linear warm-up over 10% of the steps, then cosine decay to 10% of the peak."""
    warm = max(1, total // 10)
    if step < warm:
        return peak * (step + 1) / warm
    frac = (step - warm) / max(1, total - warm)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    impl = {"forloop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
    groups = [{"params": decay, "weight_decay": cfg.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95), **impl[cfg.optimizer])


@torch.no_grad()
def evaluate(model: torch.nn.Module, loader: Any, device: str, amp: Any) -> float | None:
    model.eval()
    losses = []
    for x, y in loader:
        with amp:
            losses.append(float(model(x.to(device), y.to(device))))
    model.train()
    return sum(losses) / len(losses) if losses else None


def train(
    cfg: TrainConfig,
    *,
    backend: DeviceBackend | None = None,
    peaks: PeakOverrides = PeakOverrides(),
    on_step: Callable[[StepRecord], None] | None = None,
    profile: ProfileConfig | None = None,
    trace_path: Path | None = None,
    run_dir: Path | None = None,
    resume: bool = False,
    resume_anyway: bool = False,
    system_interval_s: float | None = None,
    memory_snapshot_steps: int = 0,
) -> RunRecord:
    """Train `cfg` (already `.resolved()`), measuring every step; return the run record.

    With `run_dir`, the run journals its events there (collect/run_journal.py) and, with
    `cfg.checkpoint_every`, checkpoints; `resume` continues from the checkpoint in `run_dir`.

    With `profile`, `profile.total_steps` more steps run under torch.profiler after the
    measured ones (not in the summary) and the trace is written to `trace_path`.

    With `system_interval_s`, a background thread samples CPU/GPU utilisation, memory, IO
    and power (collect/sampler.py) on the first rank of each machine; run.json's "system".

    With `memory_snapshot_steps` (CUDA), that many more steps run with allocation history
    on; the snapshot goes to `run_dir` and its summary to run.json's "memory_snapshot".
    """
    if profile is not None and trace_path is None:
        raise ValueError("profile needs a trace_path")
    # first, before any thread exists (process group, intra-op pool, DataLoader workers)
    binding = affinity.bind_numa(cfg.device, cfg.threads) if cfg.bind_numa else None
    dist = parallel.from_env()  # None unless launched by torchrun with WORLD_SIZE > 1
    journal = RunJournal(run_dir) if run_dir is not None and (dist is None or dist.is_main) else None
    if journal:
        journal.event("start", resume=resume)
    device = backend.device if backend is not None else parallel.local_device(dist, resolve_device(cfg.device))
    backend = backend or get_backend(device)
    dtype = resolve_dtype(cfg, device)
    if dtype == "bf16" and device.startswith("cuda") and not cuda_state.supports_bf16(device):
        raise UsageError(f"--dtype bf16: {backend.device_name()} does not support bfloat16")
    cfg = replace(cfg, dtype=dtype, device=device)
    # what the checkpoint stores and `--resume` compares (workload/resume.py)
    run_config = {**cfg.to_dict(), "world_size": dist.world_size if dist else 1}
    resume_warnings = resume_check(run_dir, run_config, anyway=resume_anyway) if resume and run_dir else []
    corpus = load_corpus(cfg.data)
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    cuda_state.set_tf32(cfg.tf32)

    torch.manual_seed(cfg.seed)
    model = GPT(cfg.model, attention=cfg.attention, checkpointing=cfg.activation_checkpointing)
    params = model.num_params()
    _preflight_memory(cfg, backend, dtype, params)
    flops = count_model_flops(cfg)
    try:
        model.to(device)
        step_model: Any = parallel.wrap(model, cfg.strategy, dist, device) if dist else model
        step_model = torch.compile(step_model) if cfg.compile else step_model
        opt = make_optimizer(model, cfg)  # after wrapping: FSDP replaces parameters with shards
        mon = Monitor(
            backend, dtype=dtype, tokens_per_step=cfg.tokens_per_step,
            flops_per_step=flops["model_flops_per_step"],
            hardware_flops_per_step=flops["hardware_flops_per_step"],
            **asdict(peaks),  # peak_tflops, peak_bandwidth_gbs, gpu_spec
            warmup_steps=cfg.warmup_steps, on_step=on_step,
            # one sampler per machine: NVML sees every GPU of the node, psutil the whole host
            system_interval_s=system_interval_s if dist is None or dist.local_rank == 0 else None,
        )
        amp = (torch.autocast(device_type=device.split(":")[0], dtype=AMP[dtype])
               if dtype in AMP else contextlib.nullcontext())
        scaler = torch.amp.GradScaler(device.split(":")[0], enabled=dtype == "fp16")
        first, resumed_rng = 0, None
        if resume:
            t0 = time.perf_counter()
            state = checkpoint.load(run_dir, model=model, optimizer=opt, scaler=scaler)
            first, resumed_rng = state["step"], state["rng"]
            if first > cfg.steps:  # checkpoint.json one save behind (killed between the two writes)
                raise UsageError(f"--steps {cfg.steps}: the checkpoint in {run_dir} already holds {first} steps")
            mon.extend([StepRecord(**r) for r in state["steps_done"]])
            mon.warnings.extend(resume_warnings)
            if journal:
                journal.event("checkpoint_load", step=first, duration_s=time.perf_counter() - t0)
        extra = (profile.total_steps if profile is not None else 0) + memory_snapshot_steps
        loader = make_loader(corpus.train, seq_len=cfg.seq_len, micro_batch=cfg.micro_batch,
                             n_batches=(cfg.steps + extra) * cfg.grad_accum, seed=cfg.seed,
                             num_workers=cfg.num_workers, pin_memory=cfg.pin_memory,
                             delay_s=cfg.data_delay_ms / 1e3, dist=dist, start=first * cfg.grad_accum)
        batches = iter(loader)
        ddp_no_sync = dist is not None and cfg.strategy == "ddp" and cfg.grad_accum > 1

        def one_step(step: int, phase: Callable[[str], Any]) -> torch.Tensor:
            loss_sum = torch.zeros((), device=device)
            for micro in range(cfg.grad_accum):
                with phase("data"):
                    x, y = next(batches)
                with phase("h2d"):
                    x = x.to(device, non_blocking=cfg.non_blocking)
                    y = y.to(device, non_blocking=cfg.non_blocking)
                with phase("forward"):
                    with amp:
                        loss = step_model(x, y) / cfg.grad_accum
                with phase("backward"):
                    # DDP: all-reduce gradients only on the last micro-batch of the step
                    sync = not ddp_no_sync or micro == cfg.grad_accum - 1
                    with contextlib.nullcontext() if sync else step_model.no_sync():
                        scaler.scale(loss).backward()
                loss_sum += loss.detach()
            with phase("optimizer"):
                for g in opt.param_groups:
                    g["lr"] = lr_at(min(step, cfg.steps - 1), cfg.steps, cfg.lr)
                if cfg.grad_clip > 0:
                    scaler.unscale_(opt)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                scaler.step(opt)
                scaler.update()
                opt.zero_grad(set_to_none=True)
            # the global batch's loss (one more small collective; the step syncs anyway)
            return parallel.mean_across_ranks(loss_sum) if dist else loss_sum

        if cfg.gc_disable:
            gc.collect()
            gc.disable()  # a gen-2 collection can stall a step for tens of ms at random
        if resumed_rng is not None:
            checkpoint.set_rng_state(resumed_rng)
        try:
            for step in range(first, cfg.steps):
                with mon.step() as s:
                    s.loss = one_step(step, s.phase)
                if journal:
                    journal.event("step", step=step, step_time_s=mon.steps[-1].step_time_s)
                if cfg.checkpoint_every and (step + 1) % cfg.checkpoint_every == 0 and run_dir is not None:
                    _save_checkpoint(run_dir, step + 1, model, opt, scaler, mon, journal, dist, run_config)
                if cfg.gc_disable and step % 100 == 99:
                    gc.collect()
        finally:
            if cfg.gc_disable:
                gc.enable()
        if profile is not None and profile.tool == "nsys":
            _nsys_steps(one_step, cfg.steps, profile, backend)
        elif profile is not None:
            _profiled_steps(one_step, cfg.steps, profile, device, trace_path)
        snapshot = None
        if memory_snapshot_steps:
            from trainprof.collect.memory_snapshot import snapshot_steps

            first_snap = cfg.steps + (profile.total_steps if profile is not None else 0)

            def run_steps() -> None:
                for i in range(memory_snapshot_steps):
                    one_step(first_snap + i, lambda _name: contextlib.nullcontext()).item()

            snapshot = snapshot_steps(run_steps, backend, run_dir)
        batches = loader = None  # stop persistent workers before evaluation
        val_loader = make_loader(corpus.val, seq_len=cfg.seq_len, micro_batch=cfg.micro_batch,
                                 n_batches=cfg.eval_batches, seed=cfg.seed + 1, dist=dist)
        t0 = time.perf_counter()
        val_loss = evaluate(step_model, val_loader, device, amp) if cfg.eval_batches else None
        if journal and cfg.eval_batches:
            journal.event("eval", duration_s=time.perf_counter() - t0)
        if dist and val_loss is not None:  # each rank saw a slice of the same global batches
            val_loss = float(parallel.mean_across_ranks(torch.tensor(val_loss, device=device)))
    except Exception as e:  # noqa: BLE001 - only OOM is translated; the rest re-raises
        if backend.is_out_of_memory(e):
            raise _oom_error(cfg, device) from None
        raise
    if journal:
        journal.event("end", steps=cfg.steps)
    m = cfg.model
    distributed = _job_summary(mon, cfg, dist, binding) if dist else None
    if dist:
        parallel.finish()
    rec = mon.record(
        model={"preset": cfg.preset, "params": params, "params_non_embedding": model.num_params(True),
               "n_layer": m.n_layer, "n_head": m.n_head, "d_model": m.d_model,
               "vocab_size": m.vocab_size, "context_len": m.context_len},
        config={**cfg.to_dict(), "corpus": corpus.source, "corpus_bytes": corpus.n_bytes},
        val_loss=val_loss,
        flops=flops,
        environment={**environment(), **affinity.environment(binding)},
        world_size=dist.world_size if dist else 1,
        # the node's GPUs (all sampled by its local rank 0) did all of its ranks' tokens
        tokens_scale=int(os.environ.get("LOCAL_WORLD_SIZE", dist.world_size)) if dist else 1,
    )
    return replace(rec, distributed=distributed, memory_snapshot=snapshot)


def _job_summary(mon: Monitor, cfg: TrainConfig, dist: parallel.DistInfo,
                 binding: dict[str, Any] | None = None) -> dict[str, Any]:
    """Per-rank step times gathered on every rank; the slowest rank is the straggler.

    Every rank runs the same steps in lockstep (each step ends in collectives), so the job's
    step time is the slowest rank's and its throughput is world_size × one rank's tokens."""
    import statistics

    s = mon.summary()
    mine = {"rank": dist.rank, "step_time_s": s.step_time_s, "step_time_median_s": s.step_time_median_s,
            "forward_s": s.forward_s, "backward_s": s.backward_s, "optimizer_s": s.optimizer_s,
            "data_s": s.data_s, **affinity.environment(binding)}
    ranks = parallel.gather(mine)
    times = [r["step_time_s"] for r in ranks]
    med = statistics.median(times)
    slow = max(ranks, key=lambda r: r["step_time_s"])
    return {
        "world_size": dist.world_size, "strategy": cfg.strategy, "backend": dist.backend,
        "global_batch_tokens": cfg.tokens_per_step * dist.world_size,
        "job_tokens_per_s": s.tokens_per_s * dist.world_size,
        "per_rank": ranks,
        "straggler_rank": slow["rank"],
        "straggler_excess_pct": 100.0 * (slow["step_time_s"] - med) / med if med > 0 else 0.0,
    }


def _save_checkpoint(run_dir: Path, step: int, model: Any, opt: Any, scaler: Any, mon: Monitor,
                     journal: RunJournal | None, dist: Any, config: dict | None = None) -> None:
    if dist is not None and not dist.is_main:
        return  # DDP replicas are identical: rank 0 saves (FSDP shards would need every rank)
    t0 = time.perf_counter()
    checkpoint.save(run_dir, step=step, model=model, optimizer=opt, scaler=scaler,
                    steps_done=[asdict(r) for r in mon.steps], config=config)
    if journal:
        journal.event("checkpoint_save", step=step, duration_s=time.perf_counter() - t0)


def _profiled_steps(one_step: Callable[..., torch.Tensor], first: int, profile: ProfileConfig,
                    device: str, trace_path: Path | None) -> None:
    """Run the profiled steps; each phase is a `trainprof.<phase>` range in the trace, so
    trace analysis can tell data waits from model work without guessing."""
    from torch.profiler import record_function

    def phase(name: str) -> Any:
        return record_function(f"trainprof.{name}")

    assert trace_path is not None
    p = StepProfiler(profile, device, trace_path)
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
