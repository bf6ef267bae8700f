"""`run --strategy tp|pp` and `--dp N --tp M --pp K`: the layout a run's flags ask for, checked.

Resolved the same way in the parent before torchrun starts the ranks (jobs/run.py, so a
bad layout is one line and exit 2, not N tracebacks) and in each rank (workload/setup.py).
`--strategy ddp|fsdp` without --tp/--pp is the data-parallel path of workload/parallel.py
(no layout); anything else runs workload/layout_train.py's steps on a DeviceMesh, with plain
data parallel (one flat gradient all-reduce) on the dp axis.
"""

from __future__ import annotations

from trainprof.errors import UsageError
from trainprof.workload.config import TrainConfig
from trainprof.workload.mesh import Layout


def wants_layout(cfg: TrainConfig) -> bool:
    """Whether the flags ask for a tensor/pipeline layout (else: DDP/FSDP over every rank)."""
    return cfg.strategy in ("tp", "pp") or cfg.tp > 1 or cfg.pp > 1 or cfg.dp > 0


def layout_of(cfg: TrainConfig, world: int) -> Layout | None:
    """The layout of `cfg` (resolved) on `world` ranks, or None (no --tp/--pp: DDP/FSDP).
    `--strategy tp` takes the ranks --dp and --pp leave for tensor parallel, `--strategy pp`
    for the pipeline; --dp 0 takes what --tp and --pp leave."""
    if not wants_layout(cfg):
        return None
    if cfg.strategy == "fsdp":
        raise UsageError(
            "--strategy fsdp with --dp/--tp/--pp is not supported: the layout's dp axis is plain data "
            "parallel (use --strategy ddp, tp or pp)"
        )
    dp, tp, pp = cfg.dp, cfg.tp, cfg.pp
    if cfg.strategy in ("tp", "pp"):
        fixed = max(dp, 1) * (pp if cfg.strategy == "tp" else tp)
        if world % fixed:
            raise UsageError(
                f"--strategy {cfg.strategy}: {world} ranks (--nproc) do not divide over --dp {dp or 1} "
                f"× --{'pp' if cfg.strategy == 'tp' else 'tp'} {pp if cfg.strategy == 'tp' else tp}"
            )
        rest = world // fixed
        if cfg.strategy == "tp" and tp == 1:
            tp = rest
        elif cfg.strategy == "pp" and pp == 1:
            pp = rest
    if dp == 0:
        if world % (tp * pp):
            raise UsageError(f"--tp {tp} × --pp {pp} does not divide the ranks (--nproc {world})")
        dp = world // (tp * pp)
    if dp * tp * pp != world:
        raise UsageError(f"--dp {dp} × --tp {tp} × --pp {pp} = {dp * tp * pp} must equal the ranks (--nproc {world})")
    _check_fits(cfg, tp, pp)
    return Layout(dp=dp, tp=tp, pp=pp, schedule=cfg.pp_schedule, microbatches=cfg.pp_microbatches if pp > 1 else 1)


def _check_fits(cfg: TrainConfig, tp: int, pp: int) -> None:
    """The model, the batch and the other flags agree with --tp and --pp (UsageError else)."""
    m = cfg.model
    if m.n_head % tp:
        raise UsageError(f"--tp {tp} must divide the {m.n_head} attention heads of {cfg.preset}")
    if pp > m.n_layer or m.n_layer % pp:
        raise UsageError(f"--pp {pp} must divide the {m.n_layer} blocks of {cfg.preset}")
    if pp > 1:
        mb = cfg.micro_batch or 0
        if mb % cfg.pp_microbatches:
            raise UsageError(
                f"--pp-microbatches {cfg.pp_microbatches} must divide the per-replica batch (--micro-batch {mb})"
            )
        if cfg.grad_accum > 1:
            raise UsageError(
                "--grad-accum with --pp: the pipeline's micro-batches are its accumulation (use --pp-microbatches)"
            )
    for on, flag in (
        (cfg.compile, "--compile"),
        (cfg.checkpoint_every, "--checkpoint-every"),
        (cfg.dtype == "fp16", "--dtype fp16"),
    ):  # fp16: one GradScaler per stage would disagree
        if on:
            raise UsageError(f"{flag} with --tp/--pp is not supported")
    if cfg.activation_checkpointing and pp > 1:
        raise UsageError("--activation-checkpointing with --pp is not supported")


def rank_share(flops: dict, layout: Layout) -> dict:
    """The FLOPs one rank computes per step: its replica's, shared by its tp·pp ranks. Even
    shares are an approximation (the last stage also holds the head, the first the embeddings):
    the job's MFU is right, one stage's is not exactly its own."""
    k = layout.tp * layout.pp
    keys = (
        "model_flops_per_step",
        "hardware_flops_per_step",
        "analytic_flops_per_step",
        "analytic_hardware_flops_per_step",
    )
    return {**flops, **{key: flops[key] / k for key in keys}, "rank_share": f"1/{k} of the replica's (tp·pp ranks)"}
