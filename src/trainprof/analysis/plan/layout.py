"""A training layout: how a model is split over GPUs and what each GPU keeps.

dp · tp · pp GPUs. `zero` 1-3 is DeepSpeed's ZeRO (Rajbhandari et al. 2020): its 16-bit
training keeps 16-bit weights and gradients and an fp32 master copy, and stage 1 / 2 / 3
shards the optimizer states / + gradients / + weights over the dp ranks. `fsdp` is PyTorch
FSDP full sharding (fp32 sharded parameters, gradients and states; 16-bit units gathered
for compute under MixedPrecision; with `fsdp_autocast`, fp32 units gathered and torch autocast's
16-bit copies, as our workload runs FSDP2). `zero 0` without fsdp is torch DDP with autocast: fp32
parameters, fp32 gradients, a 16-bit autocast copy of each matmul weight.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, get_args

from trainprof.errors import ConfigError
from trainprof.flags import option

Recompute = Literal["none", "selective", "full"]
Offload = Literal["none", "optimizer", "params"]
PlanDtype = Literal["fp32", "bf16", "fp16"]
PlanOptimizer = Literal["adamw", "adamw8bit", "adafactor", "sgd"]
Attention = Literal["flash", "eager"]
RECOMPUTES: tuple[str, ...] = get_args(Recompute)
OFFLOADS: tuple[str, ...] = get_args(Offload)
PLAN_DTYPES: tuple[str, ...] = get_args(PlanDtype)
PLAN_OPTIMIZERS: tuple[str, ...] = get_args(PlanOptimizer)
ATTENTIONS: tuple[str, ...] = get_args(Attention)


@dataclass(frozen=True)
class Layout:
    """What one GPU holds: parallelism, sharding, recompute, offload, precision, optimizer, batch."""

    PATH: ClassVar[str] = "layout"

    dp: int = 1
    """data-parallel ranks (the ones ZeRO / FSDP shard over)"""
    tp: int = 1
    """tensor-parallel ranks (Megatron: attention heads and MLP columns split)"""
    pp: int = 1
    """pipeline stages (1F1B schedule: the first stage holds min(pp, grad_accum) micro-batches)"""
    zero: int = 0
    """DeepSpeed ZeRO stage 0-3 (0: no sharding)"""
    fsdp: bool = False
    """PyTorch FSDP full shard (weights, gradients, states over dp)"""
    fsdp_autocast: bool = False
    """with fsdp and bf16/fp16: torch autocast over fp32 shards (fp32 blocks gathered; 16-bit weight copies and
    activations as under DDP) instead of MixedPrecision (16-bit blocks gathered)"""
    sequence_parallel: bool = True
    """with tp > 1: split the LayerNorm/dropout activations along the sequence (Korthikanti §4.2.2)"""
    recompute: Recompute = option("none", flag="--activation-checkpointing")
    """activation recompute: none, selective (attention core, Korthikanti §5) or full (every block)"""
    offload: Offload = "none"
    """CPU offload: optimizer (states, master weights, fp32 gradients: ZeRO-Offload) or params (and the optimizer)"""
    dtype: PlanDtype = "bf16"
    """fp32, or bf16 / fp16 mixed precision"""
    optimizer: PlanOptimizer = "adamw"
    """adamw (8 B/param), adamw8bit (2), adafactor (factored second moment), sgd (momentum, 4)"""
    attention: Attention = "flash"
    """flash (fused SDPA: no score matrix kept) or eager (softmax(QKᵀ)V, scores kept)"""
    micro_batch: int = 1
    """sequences per forward per data-parallel rank"""
    grad_accum: int = 1
    """micro-batches per optimizer step"""
    seq_len: int = 0
    """tokens per sequence; 0: the model's context"""

    def __post_init__(self) -> None:
        for f in ("dp", "tp", "pp", "micro_batch", "grad_accum"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f, "must be ≥ 1", owner=self.PATH, got=v)
        if not isinstance(self.seq_len, int) or self.seq_len < 0:
            raise ConfigError("seq_len", "must be ≥ 1", owner=self.PATH, got=self.seq_len)
        if self.zero not in (0, 1, 2, 3):
            raise ConfigError("zero", "must be 0, 1, 2 or 3", owner=self.PATH, got=self.zero)
        if self.fsdp and self.zero:
            raise ConfigError("fsdp", "is PyTorch's sharding; ZeRO is DeepSpeed's: choose one", "zero", owner=self.PATH)
        for f, allowed in (("recompute", RECOMPUTES), ("offload", OFFLOADS), ("dtype", PLAN_DTYPES),
                           ("optimizer", PLAN_OPTIMIZERS), ("attention", ATTENTIONS)):
            if getattr(self, f) not in allowed:
                raise ConfigError(f, f"must be one of {', '.join(allowed)}", owner=self.PATH, got=getattr(self, f))
        if self.fsdp_autocast and not self.fsdp:
            raise ConfigError("fsdp_autocast", "is a kind of FSDP: needs {0}", "fsdp", owner=self.PATH)
        if self.offload == "optimizer" and not self.zero:
            raise ConfigError("offload", "optimizer offload is ZeRO-Offload: needs {0} ≥ 1", "zero", owner=self.PATH)
        if self.offload == "params" and not (self.zero == 3 or self.fsdp):
            raise ConfigError("offload", "params offload needs sharded weights: {0} 3 or {1}", "zero", "fsdp",
                              owner=self.PATH)

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp

    @property
    def autocast(self) -> bool:
        """torch autocast over fp32 parameters (DDP, or FSDP with fsdp_autocast; no ZeRO): fp32
        residual stream, 16-bit copies of matmul weights (of the gathered weights under FSDP:
        the matmuls save them for backward, so all blocks' copies live as under DDP)."""
        return self.dtype != "fp32" and not self.zero and (not self.fsdp or self.fsdp_autocast)

    @property
    def sharded(self) -> bool:
        return bool(self.zero) or self.fsdp

    def name(self) -> str:
        parts = [f"dp{self.dp}"] + [f"tp{self.tp}"] * (self.tp > 1) + [f"pp{self.pp}"] * (self.pp > 1)
        if self.fsdp:
            parts.append("fsdp")
        elif self.zero:
            parts.append(f"zero{self.zero}")
        if self.recompute != "none":
            parts.append(f"{self.recompute} recompute")
        if self.offload != "none":
            parts.append(f"offload {self.offload}")
        return " ".join(parts)
