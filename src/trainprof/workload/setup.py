"""Setting a training run up: what `train` holds from its first line to its last.

`prepare` does what needs no device memory (NUMA binding first, before any thread exists;
the process group; the journal; device and dtype; the resume check; data; the model on the
host); `place` puts the model on its device and builds what steps need (wrapping for
DDP/FSDP, torch.compile, optimizer, Monitor, autocast, loss scaler, the checkpoint to resume
from, the DataLoader). `train` calls `place` inside its out-of-memory guard: that is where
a too-large micro-batch fails on a GPU.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

import torch

from trainprof.analysis.cost.flops import gpt_matmul_params, gpt_recompute_flops_per_token, gpt_train_flops_per_token
from trainprof.analysis.run.memory import estimate_train_bytes
from trainprof.backends import DeviceBackend, cuda_state, get_backend, resolve_device
from trainprof.collect.flops import count_flops
from trainprof.collect.monitor import Monitor
from trainprof.collect.run_journal import RunJournal
from trainprof.errors import ResourceError, UsageError
from trainprof.hardware.overrides import PeakOverrides
from trainprof.options import MonitorOptions
from trainprof.recordtypes.run import StepRecord
from trainprof.workload import affinity, checkpoint, parallel
from trainprof.workload.config import TrainConfig
from trainprof.workload.data import Corpus, load_corpus, make_loader
from trainprof.workload.model import GPT
from trainprof.workload.layout_flags import layout_of, rank_share
from trainprof.workload.resume import check as resume_check

AMP = {"bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass
class Session:
    """One run's state. `prepare` fills the first group, `place` the second."""

    cfg: TrainConfig  # resolved: dtype and device are concrete
    dist: parallel.DistInfo | None  # None unless launched by torchrun with WORLD_SIZE > 1
    binding: dict[str, Any] | None  # the NUMA binding, when asked for
    journal: RunJournal | None  # the main rank's event journal, with a run folder
    backend: DeviceBackend
    run_config: dict[str, Any]  # what a checkpoint stores and `--resume` compares
    resume_warnings: list[str]
    corpus: Corpus
    model: GPT
    params: int
    flops: dict[str, Any]
    step_model: Any = None  # the model as steps call it: wrapped (DDP/FSDP), compiled
    opt: Any = None
    mon: Monitor | None = None
    amp: Any = None  # autocast context for bf16/fp16, else a null context
    scaler: Any = None
    first: int = 0  # the first step to run (> 0 when resuming)
    resumed_rng: Any = None
    loader: Any = None
    batches: Any = None
    layout: Any = None  # workload.mesh.Layout of a --tp/--pp run (workload/layout_flags.py), else None
    job: Any = None  # its rank's part (workload/layout_train.Job): mesh, model shard, schedule, optimizer
    data_dist: parallel.DistInfo | None = None  # whose slice of each global batch this rank reads

    @property
    def device(self) -> str:
        return self.cfg.device


@contextlib.contextmanager
def process_settings():
    """The process-wide torch knobs a run sets (`--threads`, `--tf32`), put back after it: an
    in-process caller (the API, tests) keeps its own. Without this, one `run --threads 1` in a
    test process left every later in-process run on one thread, and a loss compared with a
    fresh process's differed in the 7th digit."""
    threads, tf32 = torch.get_num_threads(), cuda_state.tf32_state()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        cuda_state.restore_tf32(tf32)


def prepare(cfg: TrainConfig, backend: DeviceBackend | None, run_dir: Path | None, resume: bool,
            resume_anyway: bool) -> Session:
    """Everything before the model touches its device."""
    # first, before any thread exists (process group, intra-op pool, DataLoader workers)
    binding = affinity.bind_numa(cfg.device, cfg.threads) if cfg.bind_numa else None
    dist = parallel.from_env()
    journal = RunJournal(run_dir) if run_dir is not None and (dist is None or dist.is_main) else None
    if journal:
        journal.event("start", resume=resume)
    device = backend.device if backend is not None else parallel.local_device(dist, resolve_device(cfg.device))
    backend = backend or get_backend(device)
    dtype = resolve_dtype(cfg, device)
    if dtype == "bf16" and device.startswith("cuda") and not cuda_state.supports_bf16(device):
        raise UsageError(f"--dtype bf16: {backend.device_name()} does not support bfloat16")
    cfg = replace(cfg, dtype=dtype, device=device)
    run_config = {**cfg.to_dict(), "world_size": dist.world_size if dist else 1}
    resume_warnings = resume_check(run_dir, run_config, anyway=resume_anyway) if resume and run_dir else []
    if cfg.threads is not None:  # before the corpus: its torch.cat is the first parallel op
        torch.set_num_threads(cfg.threads)
    layout = layout_of(cfg, dist.world_size if dist else 1)  # checked by the parent too (jobs/run.py)
    corpus = load_corpus(cfg.data)
    cuda_state.set_tf32(cfg.tf32)

    torch.manual_seed(cfg.seed)
    model = GPT(cfg.model, attention=cfg.attention, checkpointing=cfg.activation_checkpointing,
                recompute=cfg.recompute)
    params = model.num_params()
    _preflight_memory(cfg, backend, dtype, params)
    flops = count_model_flops(cfg)
    return Session(cfg=cfg, dist=dist, binding=binding, journal=journal, backend=backend, run_config=run_config,
                   resume_warnings=resume_warnings, corpus=corpus, model=model, params=params,
                   flops=rank_share(flops, layout) if layout is not None else flops, layout=layout,
                   data_dist=dist)


def place(s: Session, *, peaks: PeakOverrides, on_step: Callable[[StepRecord], None] | None,
          monitor: MonitorOptions | None, run_dir: Path | None, resume: bool, extra_steps: int) -> None:
    """The model on its device and what the steps need; `extra_steps` more batches than the
    measured steps (profiled and snapshot steps run after them); `monitor`: the sampler's
    interval (None: no sampler)."""
    cfg, dist, device = s.cfg, s.dist, s.device
    s.model.to(device)
    if s.layout is not None:
        _place_layout(s)
    else:
        step_model: Any = parallel.wrap(s.model, cfg.strategy, dist, device) if dist else s.model
        s.step_model = torch.compile(step_model) if cfg.compile else step_model
        s.opt = make_optimizer(s.model, cfg)  # after wrapping: FSDP replaces parameters with shards
    s.mon = Monitor(
        s.backend, dtype=cfg.dtype, tokens_per_step=cfg.tokens_per_step,
        flops_per_step=s.flops["model_flops_per_step"],
        hardware_flops_per_step=s.flops["hardware_flops_per_step"],
        **asdict(peaks),  # peak_tflops, peak_bandwidth_gbs, gpu_spec
        warmup_steps=cfg.warmup_steps, on_step=on_step,
        # one sampler per machine: NVML sees every GPU of the node, psutil the whole host
        system_interval_s=monitor.sampling_s if monitor is not None and (dist is None or dist.local_rank == 0)
        else None,
    )
    s.amp = (torch.autocast(device_type=device.split(":")[0], dtype=AMP[cfg.dtype])
             if cfg.dtype in AMP else contextlib.nullcontext())
    s.scaler = torch.amp.GradScaler(device.split(":")[0], enabled=cfg.dtype == "fp16")
    if resume:
        t0 = time.perf_counter()
        state = checkpoint.load(run_dir, model=s.model, optimizer=s.opt, scaler=s.scaler)
        s.first, s.resumed_rng = state["step"], state["rng"]
        if s.first > cfg.steps:  # checkpoint.json one save behind (killed between the two writes)
            raise UsageError(f"--steps {cfg.steps}: the checkpoint in {run_dir} already holds {s.first} steps")
        s.mon.extend([StepRecord(**r) for r in state["steps_done"]])
        s.mon.warnings.extend(s.resume_warnings)
        if s.journal:
            s.journal.event("checkpoint_load", step=s.first, duration_s=time.perf_counter() - t0)
    s.loader = make_loader(s.corpus.train, seq_len=cfg.seq_len, micro_batch=cfg.micro_batch,
                           n_batches=(cfg.steps + extra_steps) * cfg.grad_accum, seed=cfg.seed,
                           num_workers=cfg.num_workers, pin_memory=cfg.pin_memory,
                           delay_s=cfg.data_delay_ms / 1e3, dist=s.data_dist, start=s.first * cfg.grad_accum)
    s.batches = iter(s.loader)


def _place_layout(s: Session) -> None:
    """The session's model split over a DeviceMesh by workload/layout_train.Job (the same code
    the layout tests train with); each replica's ranks read the same rows (`data_dist`: the
    replica's index among dp, as DDP's ranks among world_size)."""
    from trainprof.workload.layout_train import Job, LayoutRun

    cfg, dist, lay = s.cfg, s.dist, s.layout
    run = LayoutRun(model=cfg.model, layout=lay, global_batch=cfg.micro_batch * lay.dp, seq_len=cfg.seq_len,
                    steps=cfg.steps, lr=cfg.lr, seed=cfg.seed)
    # foreach/fused take one list of like tensors: DTensor shards beside plain norms are not
    opt_cfg = replace(cfg, optimizer="forloop") if lay.tp > 1 else cfg
    s.job = Job(run, dist.threads, gpt=s.model, make_opt=lambda m: make_optimizer(m, opt_cfg), device=s.device)
    s.step_model, s.opt = s.job.module, s.job.opt
    s.data_dist = replace(dist, rank=s.job.dp_index, world_size=lay.dp)


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
            model = GPT(m, attention=cfg.attention, checkpointing=checkpointing, recompute=cfg.recompute)
            x = torch.zeros(cfg.micro_batch, cfg.seq_len, dtype=torch.long)
        return count_flops(lambda: model(x, x).backward())

    model_flops, per_op = one(False)
    hw_flops = one(True)[0] if cfg.activation_checkpointing else model_flops
    n_mm = gpt_matmul_params(m.n_layer, m.d_model, m.vocab_size, m.mlp_ratio)
    per_tok = gpt_train_flops_per_token(n_mm, m.n_layer, m.d_model, cfg.seq_len)
    recompute = (0 if not cfg.activation_checkpointing
                 # selective: QKᵀ again, 2·T·d per token and layer; the non-reentrant checkpoint stops
                 # before AV, whose output backward never reads (proj saved its own input)
                 else m.n_layer * 2 * m.d_model * cfg.seq_len if cfg.recompute == "selective"
                 else gpt_recompute_flops_per_token(m.n_layer, m.d_model, cfg.seq_len, m.mlp_ratio))
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
        materialised_scores=cfg.attention == "manual" and not (cfg.activation_checkpointing and cfg.recompute == "selective"),
        checkpointing=cfg.activation_checkpointing and cfg.recompute == "full",
    )
    avail = backend.available_memory_bytes()
    if avail is not None and need > avail:
        raise ResourceError(
            f"--micro-batch {cfg.micro_batch}: {cfg.preset} at seq {cfg.seq_len} needs about "
            f"{need / 2**30:.1f} GiB but {avail / 2**30:.1f} GiB is available; use a smaller "
            "--micro-batch with --grad-accum, --activation-checkpointing or --dtype bf16"
        )


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    if cfg.optimizer == "adafactor":
        # torch ≥ 2.5; its defaults (β2 decay −0.8, relative step off): a matrix keeps one row and
        # one column statistic (R + C fp32), a vector its full second moment; no first moment
        return torch.optim.Adafactor(groups, lr=cfg.lr)
    impl = {"forloop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95), **impl[cfg.optimizer])
