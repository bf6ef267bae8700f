"""Every knob of the reference workload in two frozen, validated dataclasses.

`TrainConfig` is the single source of truth for the workload's knobs: `trainprof run`,
`tune`, `study` and `memory` generate their flags from its fields (trainprof/flags.py:
docstring → help, default → default, type → parser), each command holding it as a section
of its own configuration (`study.train`) with its own defaults (tune's trials are 10 steps of
fp32), and the tuner derives its trial command lines from the same field types. It validates
itself on construction (`__post_init__`, so a bad value never reaches a folder or a journal);
an error names the field's path, and on a command line its flag
(`study.train.dtype (--dtype) must be one of auto, fp32, bf16, fp16, got 'fp64'`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar, Literal, get_args

from trainprof.errors import ConfigError


@dataclass(frozen=True)
class ModelConfig:
    n_layer: int
    """transformer blocks"""
    n_head: int
    """attention heads; d_model must divide evenly"""
    d_model: int
    """residual stream width"""
    vocab_size: int
    """token ids in [0, vocab_size)"""
    context_len: int
    """learned position table size: the longest sequence the model accepts"""
    mlp_ratio: int = 4
    """MLP hidden = mlp_ratio · d_model (GPT-2: 4)"""

    def padded(self, multiple: int = 64) -> "ModelConfig":
        """Vocab rounded up to a multiple of 64 (nanoGPT's 50257 → 50304): friendlier GEMM tiles."""
        v = -(-self.vocab_size // multiple) * multiple
        return replace(self, vocab_size=v)


PRESETS: dict[str, ModelConfig] = {
    # tiny: byte-level (vocab 256), ~3.3M params, a few seconds a step on 2 CPU cores.
    "tiny": ModelConfig(n_layer=4, n_head=4, d_model=256, vocab_size=256, context_len=256),
    # GPT-2 family (Radford et al. 2019; sizes as in nanoGPT's from_pretrained).
    "gpt2-124m": ModelConfig(n_layer=12, n_head=12, d_model=768, vocab_size=50257, context_len=1024),
    "gpt2-350m": ModelConfig(n_layer=24, n_head=16, d_model=1024, vocab_size=50257, context_len=1024),
    "gpt2-774m": ModelConfig(n_layer=36, n_head=20, d_model=1280, vocab_size=50257, context_len=1024),
}

# Per-preset defaults for knobs the user did not set.
PRESET_DEFAULTS: dict[str, dict[str, Any]] = {
    "tiny": {"micro_batch": 16, "seq_len": 256, "lr": 3e-3},
    "gpt2-124m": {"micro_batch": 8, "seq_len": 1024, "lr": 6e-4},
    "gpt2-350m": {"micro_batch": 8, "seq_len": 1024, "lr": 3e-4},
    "gpt2-774m": {"micro_batch": 4, "seq_len": 1024, "lr": 2.5e-4},
}

Dtype = Literal["auto", "fp32", "bf16", "fp16"]
Optimizer = Literal["forloop", "foreach", "fused", "adafactor"]
Recompute = Literal["full", "selective"]
Attention = Literal["sdpa", "manual"]
Strategy = Literal["ddp", "fsdp", "tp", "pp"]
Schedule = Literal["gpipe", "1f1b"]
DTYPES: tuple[str, ...] = get_args(Dtype)
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)
ATTENTIONS: tuple[str, ...] = get_args(Attention)
STRATEGIES: tuple[str, ...] = get_args(Strategy)
SCHEDULES: tuple[str, ...] = get_args(Schedule)
RECOMPUTES: tuple[str, ...] = get_args(Recompute)

# steps, micro-batch, accumulation: a sampler's length is their product, an index-sized int
# (#45: --steps 99999999999999999999 was an OverflowError traceback from the DataLoader)
MAX_COUNT = (1 << 31) - 1


@dataclass(frozen=True)
class TrainConfig:
    PATH: ClassVar[str] = "train"  # where its errors say it is, unless a command holds it elsewhere
    FLAG_BOOLS: ClassVar[str] = "both"  # --compile/--no-compile: a trial's command line states both

    preset: str = "tiny"
    """model size: tiny, gpt2-124m, gpt2-350m or gpt2-774m (PRESETS)"""
    device: str = "auto"
    """auto (CUDA if available, else CPU), cpu, cuda, cuda:N"""
    steps: int = 80
    """optimizer steps to run"""
    micro_batch: int | None = None
    """sequences per forward/backward (default: the preset's)"""
    seq_len: int | None = None
    """tokens per sequence, ≤ the preset's context (default: the preset's)"""
    grad_accum: int = 1
    """micro-batches per optimizer step"""
    dtype: Dtype = "auto"
    """fp32, bf16 or fp16 autocast (fp16 adds a GradScaler); auto: bf16 on GPUs that have it, else fp32"""
    compile: bool = False
    """wrap the model in torch.compile"""
    optimizer: Optimizer = "foreach"
    """AdamW implementation: forloop, foreach (multi-tensor) or fused (one kernel); or adafactor
    (torch.optim.Adafactor: factored second moment, no first moment: rows + cols per matrix)"""
    activation_checkpointing: bool = False
    """recompute each block's activations in backward (less memory, ~1/3 more compute)"""
    recompute: Recompute = "full"
    """with activation checkpointing: full (every block) or selective (only attention's softmax(QKᵀ)V core,
    Korthikanti et al. 2022 §5: drops the T×T scores of manual attention for a few % more compute)"""
    attention: Attention = "sdpa"
    """sdpa (F.scaled_dot_product_attention: flash/efficient kernels) or manual (softmax(QKᵀ)V)"""
    num_workers: int = 0
    """DataLoader worker processes (0: load in the training process)"""
    pin_memory: bool = False
    """page-locked host batches, needed for truly asynchronous H2D copies"""
    non_blocking: bool = False
    """copy batches with .to(non_blocking=True)"""
    pad_vocab: bool = False
    """round the vocabulary up to a multiple of 64"""
    lr: float | None = None
    """peak learning rate (default: the preset's); linear warm-up then cosine to 10%"""
    weight_decay: float = 0.1
    """AdamW decoupled weight decay on matrices (not on biases, norms)"""
    grad_clip: float = 1.0
    """max global gradient norm; 0 disables clipping"""
    seed: int = 1337
    """seeds the model init and the data order"""
    data: str | None = None
    """text file or folder of text files (default: this Python's standard library sources)"""
    eval_batches: int = 8
    """validation micro-batches evaluated after training"""
    warmup_steps: int = 2
    """first steps left out of the summary (allocator, autotuning, compile)"""
    tf32: bool = False
    """allow TF32 Tensor Core matmuls for fp32 on Ampere+ GPUs (torch.backends.cuda.matmul.allow_tf32)"""
    gc_disable: bool = False
    """disable Python's cyclic GC during steps (collected every 100 steps instead): no random pauses"""
    threads: int | None = None
    """intra-op CPU threads (torch.set_num_threads; default: PyTorch's, or with bind_numa the rank's cores)"""
    bind_numa: bool = False
    """bind this rank to its NUMA-local cores (workload/affinity.py); threads default to their count"""
    checkpoint_every: int = 0
    """save a checkpoint (model, optimizer, step, RNG) every N steps; 0: never"""
    strategy: Strategy = "ddp"
    """parallelism when launched on several ranks (torchrun): ddp or fsdp (full shard) over every rank, tp
    (tensor parallel over the ranks --dp and --pp leave) or pp (pipeline stages over the ranks --dp and --tp
    leave)"""
    dp: int = 0
    """data-parallel replicas of a layout with --tp/--pp (plain gradient all-reduce); 0: the ranks --tp and --pp
    leave"""
    tp: int = 1
    """tensor-parallel ranks per replica (DTensor column/row-wise attention and MLP); must divide the heads"""
    pp: int = 1
    """pipeline stages per replica (torch.distributed.pipelining); must divide the blocks"""
    pp_microbatches: int = 4
    """pipeline micro-batches per step (m: the bubble is (p−1)/(m+p−1)); must divide --micro-batch"""
    pp_schedule: Schedule = "gpipe"
    """pipeline schedule: gpipe (all forwards, then all backwards) or 1f1b"""
    data_delay_ms: float = 0.0
    """per-sample sleep in the dataset: simulates a slow input pipeline (decode, augment) for demos and tests"""

    # ---- derived -------------------------------------------------------------------
    @property
    def model(self) -> ModelConfig:
        m = PRESETS[self.preset]
        return m.padded() if self.pad_vocab else m

    def resolved(self, **extra: Any) -> "TrainConfig":
        """Fill the preset's defaults for unset knobs; return a new (validated) config."""
        d = PRESET_DEFAULTS.get(self.preset, {})
        cfg = replace(
            self,
            micro_batch=self.micro_batch if self.micro_batch is not None else d.get("micro_batch"),
            seq_len=self.seq_len if self.seq_len is not None else d.get("seq_len"),
            lr=self.lr if self.lr is not None else d.get("lr"),
            **extra,
        )
        return cfg

    @property
    def tokens_per_step(self) -> int:
        assert self.micro_batch is not None and self.seq_len is not None
        return self.micro_batch * self.seq_len * self.grad_accum

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def _check_counts(self, bad: Any) -> None:
        """Counts: whole numbers within MAX_COUNT (None where a field may be left to the preset)."""
        for name in ("steps", "micro_batch", "seq_len", "grad_accum", "tp", "pp", "pp_microbatches"):
            v = getattr(self, name)
            if v is None and name in ("steps", "micro_batch", "seq_len", "grad_accum"):
                continue
            if not isinstance(v, int) or isinstance(v, bool) or not 0 < v <= MAX_COUNT:
                raise bad(name, f"must be an integer from 1 to {MAX_COUNT:,}")
        if not isinstance(self.dp, int) or isinstance(self.dp, bool) or not 0 <= self.dp <= MAX_COUNT:
            raise bad("dp", f"must be an integer from 0 (the ranks left) to {MAX_COUNT:,}")

    def __post_init__(self) -> None:
        def bad(field: str, why: str) -> ConfigError:
            return ConfigError(field, why, owner=self.PATH, got=getattr(self, field))

        if self.preset not in PRESETS:
            raise bad("preset", f"must be one of {', '.join(PRESETS)}")
        self._check_counts(bad)
        if self.seq_len is not None and self.seq_len > PRESETS[self.preset].context_len:
            raise bad("seq_len", f"must be ≤ the {self.preset} context of {PRESETS[self.preset].context_len}")
        for name, allowed in (("dtype", DTYPES), ("optimizer", OPTIMIZERS), ("attention", ATTENTIONS),
                              ("strategy", STRATEGIES), ("pp_schedule", SCHEDULES), ("recompute", RECOMPUTES)):
            if getattr(self, name) not in allowed:
                raise bad(name, f"must be one of {', '.join(allowed)}")
        if self.recompute == "selective" and not self.activation_checkpointing:
            raise ConfigError("recompute", "must be full without {0} (selective is a kind of checkpointing)",
                              "activation_checkpointing", owner=self.PATH, got=self.recompute)
        if self.lr is not None and not self.lr > 0:
            raise bad("lr", "must be > 0")
        for name in ("num_workers", "weight_decay", "grad_clip", "eval_batches", "warmup_steps", "checkpoint_every",
                     "data_delay_ms"):
            if getattr(self, name) < 0:
                raise bad(name, "must be ≥ 0")
        if self.threads is not None and self.threads < 1:
            raise bad("threads", "must be ≥ 1")
