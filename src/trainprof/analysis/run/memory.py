"""Analytic training memory of the GPT workload (bytes), term by term.

Pure arithmetic on shapes; every formula can be checked by hand (tests/unit/analysis/
test_memory.py does) and each carries its source.

Model states (AdamW, fp32 master weights):
  weights 4 B + gradients 4 B + AdamW moments 2×4 B = 16 B/param. Autocast (bf16/fp16)
  keeps all of them fp32 and adds a 16-bit copy of each matmul weight (2 B/param, cached
  by autocast and saved for backward; torch.amp docs, "autocast"): 18 B/param for AdamW
  mixed precision as this trainer runs it. ZeRO (Rajbhandari et al. 2020, §3.1) counts 16 B/param for mixed precision
  because its fp16 training keeps 16-bit gradients (2 + 2 + 12); `bytes_per_param` lists both.

Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", §4.1): per layer, 16-bit, no tensor parallelism, no flash attention,

    s·b·h·(34 + 5·a·s/h) bytes      (s sequence, b micro-batch, h width, a heads)

34·s·b·h = 16 saved tensors of s·b·h elements at 2 B (2 LayerNorm inputs, QKV input,
Q, K, V, attention-projection input, MLP input, GELU input 4sbh, down-projection input
4sbh) + 2 dropout masks at 1 B; 5·a·s²·b = softmax output (2) + its dropout mask (1) +
the dropout output (2). Our GPT has no dropout, so it saves 32·s·b·h + 2·a·s²·b (and,
on the manual path, the s×s bool causal mask masked_fill keeps). Checked against
torch.autograd.graph.saved_tensors_hooks on the real block (test_memory.py). Fused
SDPA (flash / memory-efficient kernels) never stores the a·s²·b score matrix: the whole
5·a·s/h term goes, replaced by a per-row logsumexp (a·s·b fp32); the kernel keeps its
output, which is also the projection input, so the s·b·h count stays 16 elements.
In fp32 every saved tensor takes 4 B, doubling every term. Under autocast the two
LayerNorm inputs (the fp32 residual stream) stay 4 B; CUDA autocast also runs softmax in
fp32 (4 B scores plus the 16-bit copy the A·V matmul saves), CPU autocast does not.

Activation checkpointing (one checkpoint per block, non-reentrant): forward keeps only
each block's input (s·b·h fp32: Korthikanti's 2·s·b·h·L at 16 bit); backward recomputes
one block at a time, so one layer's full activations come back on top.

Logits: B·T·V values. The loss backward holds three fp32 B·T·V tensors at once (the
saved log-softmax, its incoming gradient, its outgoing gradient): 12 B per logit.

Backward working set: the largest set of transient activation gradients inside a block,
the MLP's two r·s·b·h gradients (of the GELU output and input), plus the residual-stream
gradient and the tied head's weight gradient (V·h fp32, the first gradient made), net of
what backward has released by then (the head's saved activations, the last block's
down-projection input).

Peak: the larger of (a) backward, while all saved activations are still alive: weights,
their 16-bit copies, optimizer states, the saved activations and the larger of the loss
temporaries and the backward working set (plus gradients, which persist between
micro-batches under gradient accumulation), and (b) the optimizer step: weights,
gradients, states and the optimizer's temporaries (foreach AdamW builds one full-size
list, √v; the for-loop version temporaries the size of one parameter; fused none).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

FP32, HALF = 4, 2
DTYPES = ("fp32", "bf16", "fp16")
ADAMW_STATE_BYTES = 8  # exp_avg + exp_avg_sq, fp32 (Kingma & Ba 2015; the seed's 8 B/param)


@dataclass(frozen=True)
class MemoryInputs:
    """Everything the estimate depends on (plain numbers: analysis/ imports no workload)."""

    n_layer: int
    n_head: int
    d_model: int
    vocab_size: int
    context_len: int
    micro_batch: int
    seq_len: int
    mlp_ratio: int = 4
    dtype: str = "fp32"
    """fp32, or bf16 / fp16 autocast (fp32 master weights, gradients and states)"""
    attention: str = "sdpa"
    """sdpa (fused: no score matrix kept) or manual (softmax(QKᵀ)V, scores kept)"""
    optimizer: str = "foreach"
    """AdamW implementation: forloop, foreach or fused (decides the step's temporaries)"""
    checkpointing: bool = False
    grad_accum: int = 1
    device_kind: str = "cuda"
    """cuda or cpu: only changes which ops autocast runs in fp32 (softmax on CUDA)"""

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"memory.dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.attention not in ("sdpa", "manual"):
            raise ValueError(f"memory.attention must be sdpa or manual, got {self.attention!r}")
        if self.optimizer not in ("forloop", "foreach", "fused"):
            raise ValueError(f"memory.optimizer must be forloop, foreach or fused, got {self.optimizer!r}")
        for name in ("n_layer", "n_head", "d_model", "vocab_size", "micro_batch", "seq_len", "grad_accum"):
            if getattr(self, name) <= 0:
                raise ValueError(f"memory.{name} must be > 0, got {getattr(self, name)}")

    @property
    def autocast(self) -> bool:
        return self.dtype != "fp32"


# ---- parameters ------------------------------------------------------------------------
def gpt_param_count(n_layer: int, d_model: int, vocab_size: int, context_len: int, mlp_ratio: int = 4) -> int:
    """Unique parameters of workload/model.py's GPT (tied head counted once).

    Per block: QKV 3d²+3d, projection d²+d, MLP 2·r·d²+r·d+d, two LayerNorms 4d, i.e.
    (4+2r)·d² + (9+r)·d; plus token (V·d) and position (ctx·d) tables and the final LayerNorm 2d.
    """
    d, r = d_model, mlp_ratio
    return n_layer * ((4 + 2 * r) * d * d + (9 + r) * d) + vocab_size * d + context_len * d + 2 * d


def autocast_param_count(n_layer: int, d_model: int, vocab_size: int, mlp_ratio: int = 4) -> int:
    """Parameters autocast copies to 16 bit: every Linear weight and bias, and the tied head.

    Not the LayerNorms (fp32 ops) or the position table (an embedding lookup, not a matmul)."""
    d, r = d_model, mlp_ratio
    return n_layer * ((4 + 2 * r) * d * d + (5 + r) * d) + vocab_size * d


def largest_param(n_layer: int, d_model: int, vocab_size: int, context_len: int, mlp_ratio: int = 4) -> int:
    """Elements of the biggest single tensor (the for-loop optimizer's temporaries scale with it)."""
    return max(vocab_size * d_model, context_len * d_model, mlp_ratio * d_model * d_model if n_layer else 0)


def model_state_bytes(params: int, *, dtype: str = "fp32", optimizer: str = "foreach",
                      autocast_params: int = 0, largest: int = 0) -> dict[str, int]:
    """Weights, 16-bit copies, gradients, AdamW states and the optimizer step's temporaries."""
    temps = {
        "foreach": FP32 * params,  # _foreach_sqrt(exp_avg_sq): one full-size list (torch.optim.adamw)
        "forloop": 2 * FP32 * largest,  # exp_avg_sq.sqrt() / bias_correction: two param-sized tensors
        "fused": 0,  # one kernel per group, updates in place
    }[optimizer]
    return {
        "weights": FP32 * params,
        "weights_16bit": HALF * autocast_params if dtype != "fp32" else 0,
        "grads": FP32 * params,  # autocast grads land in the fp32 .grad of fp32 parameters
        "optimizer_states": ADAMW_STATE_BYTES * params,
        "optimizer_temporaries": temps,
    }


def bytes_per_param() -> dict[str, dict[str, int]]:
    """The per-parameter rules (weights + grads + optimizer), with their sources."""
    return {
        "fp32 AdamW": {"weights": 4, "grads": 4, "optimizer": 8, "total": 16},
        # autocast: fp32 master + 16-bit working copy of matmul weights, fp32 grads
        "mixed precision AdamW (autocast, this trainer)": {"weights": 4 + 2, "grads": 4, "optimizer": 8, "total": 18},
        # ZeRO §3.1: fp16 params 2 + fp16 grads 2 + fp32 master, m, v 12
        "mixed precision AdamW (ZeRO, fp16 grads)": {"weights": 2, "grads": 2, "optimizer": 12, "total": 16},
    }


# ---- activations -----------------------------------------------------------------------
def korthikanti_layer_bytes(s: int, b: int, h: int, a: int) -> int:
    """Korthikanti et al. 2022 eq. (1): s·b·h·(34 + 5·a·s/h) bytes, 16-bit, with dropout, no flash."""
    return 34 * s * b * h + 5 * a * s * s * b


def layer_activation_terms(s: int, b: int, h: int, a: int, *, mlp_ratio: int = 4, dtype: str = "fp32",
                           attention: str = "sdpa", device_kind: str = "cuda") -> dict[str, int]:
    """Bytes each saved tensor of one block takes (our GPT: no dropout)."""
    sbh = s * b * h
    half = HALF if dtype != "fp32" else FP32
    terms = {
        "layernorm_inputs": 2 * FP32 * sbh,  # the residual stream is fp32 even under autocast
        "layernorm_stats": 2 * 2 * FP32 * s * b,  # mean and rstd per token, fp32
        "qkv_input": half * sbh,
        "q_k_v": 3 * half * sbh,
        "attn_proj_input": half * sbh,  # SDPA's saved output is this same tensor
        "mlp_input": half * sbh,
        "gelu_input": mlp_ratio * half * sbh,
        "mlp_proj_input": mlp_ratio * half * sbh,
    }
    if attention == "manual":
        scores = a * s * s * b
        if dtype != "fp32" and device_kind == "cuda":
            terms["attn_scores"] = FP32 * scores + HALF * scores  # fp32 softmax + the 16-bit copy A·V saves
        else:
            terms["attn_scores"] = half * scores
        terms["attn_mask"] = s * s  # masked_fill saves the inverted causal mask: bool, s×s, shared
    else:
        terms["attn_logsumexp"] = FP32 * a * s * b  # flash backward's per-row statistics
    return terms


def head_activation_terms(s: int, b: int, h: int, vocab_size: int, *, dtype: str = "fp32") -> dict[str, int]:
    """Saved outside the blocks: final LayerNorm input, LM-head input, token ids; loss temporaries."""
    half = HALF if dtype != "fp32" else FP32
    return {
        "final_layernorm_input": FP32 * s * b * h + 2 * FP32 * s * b,
        "lm_head_input": half * s * b * h,
        "token_ids": 8 * s * b,  # int64 ids saved by the embedding backward
        "logits": 12 * s * b * vocab_size,  # 3 live fp32 B·T·V tensors in the loss backward
    }


def activation_bytes(m: MemoryInputs) -> dict[str, int]:
    """Saved activations per micro-batch: per layer, all layers, checkpointed, the head."""
    s, b, h, a = m.seq_len, m.micro_batch, m.d_model, m.n_head
    layer = sum(layer_activation_terms(s, b, h, a, mlp_ratio=m.mlp_ratio, dtype=m.dtype,
                                       attention=m.attention, device_kind=m.device_kind).values())
    head = head_activation_terms(s, b, h, m.vocab_size, dtype=m.dtype)
    block_input = FP32 * s * b * h  # what a checkpointed block keeps (fp32 residual stream)
    half = HALF if m.autocast else FP32
    return {
        "per_layer": layer,
        "layers": m.n_layer * layer,
        # all block inputs, plus one block recomputed during backward
        "layers_checkpointed": m.n_layer * block_input + layer,
        "head": head["final_layernorm_input"] + head["lm_head_input"] + head["token_ids"],
        "logits": head["logits"],
        # the biggest backward working set inside a block, net of what backward has freed by
        # then: the MLP's two r·s·b·h activation gradients, the residual-stream gradient and the
        # tied head's weight gradient (made first), less the head's saved activations and the
        # last block's down-projection input (released once their backward ran). Measured:
        # without the release the fp32 estimate read 4-7% above the probe (docs/memory.md)
        "backward_working_set": 2 * m.mlp_ratio * half * s * b * h + FP32 * s * b * h
        + FP32 * m.vocab_size * h - head["final_layernorm_input"] - head["lm_head_input"] - head["token_ids"]
        - m.mlp_ratio * half * s * b * h,
        "korthikanti_per_layer_16bit": korthikanti_layer_bytes(s, b, h, a),
    }


# ---- totals ----------------------------------------------------------------------------
def breakdown(m: MemoryInputs) -> dict:
    """Every term, both activation variants, and the peak estimate for `m`'s checkpointing."""
    params = gpt_param_count(m.n_layer, m.d_model, m.vocab_size, m.context_len, m.mlp_ratio)
    cast = autocast_param_count(m.n_layer, m.d_model, m.vocab_size, m.mlp_ratio)
    if m.checkpointing and m.autocast:
        # block weights are cast again per recomputed block; only the head's copy is saved
        per_block = cast - m.vocab_size * m.d_model
        cast = m.vocab_size * m.d_model + per_block // m.n_layer
    states = model_state_bytes(params, dtype=m.dtype, optimizer=m.optimizer, autocast_params=cast,
                               largest=largest_param(m.n_layer, m.d_model, m.vocab_size, m.context_len, m.mlp_ratio))
    acts = activation_bytes(m)
    layers = acts["layers_checkpointed"] if m.checkpointing else acts["layers"]
    activations = layers + acts["head"]
    transient = max(acts["logits"], acts["backward_working_set"])
    fwd_bwd = (states["weights"] + states["weights_16bit"] + states["optimizer_states"] + activations
               + transient + (states["grads"] if m.grad_accum > 1 else 0))
    opt_step = (states["weights"] + states["grads"] + states["optimizer_states"]
                + states["optimizer_temporaries"])
    return {
        "inputs": asdict(m),
        "params": params,
        "params_bytes": states["weights"],
        "weights_16bit_bytes": states["weights_16bit"],
        "grads_bytes": states["grads"],
        "optimizer_bytes": states["optimizer_states"],
        "optimizer_temporaries_bytes": states["optimizer_temporaries"],
        "activations_bytes": activations,
        "activations_no_checkpointing_bytes": acts["layers"] + acts["head"],
        "activations_checkpointing_bytes": acts["layers_checkpointed"] + acts["head"],
        "activations_per_layer_bytes": acts["per_layer"],
        "korthikanti_per_layer_16bit_bytes": acts["korthikanti_per_layer_16bit"],
        "logits_bytes": acts["logits"],
        "backward_working_set_bytes": acts["backward_working_set"],
        "peak_forward_backward_bytes": fwd_bwd,
        "peak_optimizer_step_bytes": opt_step,
        "peak_bytes": max(fwd_bwd, opt_step),
        "peak_phase": "forward/backward" if fwd_bwd >= opt_step else "optimizer step",
        "layer_terms": layer_activation_terms(m.seq_len, m.micro_batch, m.d_model, m.n_head,
                                              mlp_ratio=m.mlp_ratio, dtype=m.dtype,
                                              attention=m.attention, device_kind=m.device_kind),
        "bytes_per_param": bytes_per_param(),
    }


def estimate_train_bytes(
    *,
    params: int,
    n_layer: int,
    n_head: int,
    d_model: int,
    vocab_size: int,
    micro_batch: int,
    seq_len: int,
    activation_bytes: int,
    materialised_scores: bool,
    checkpointing: bool,
) -> int:
    """A conservative single number for the trainer's CPU pre-flight (kept for its callers):
    all model-state terms at once (16 B/param plus foreach's 4 B/param) plus the
    forward/backward activation and loss terms of `breakdown`."""
    m = MemoryInputs(n_layer=n_layer, n_head=n_head, d_model=d_model, vocab_size=vocab_size,
                     context_len=seq_len, micro_batch=micro_batch, seq_len=seq_len,
                     dtype="fp32" if activation_bytes == FP32 else "bf16",
                     attention="manual" if materialised_scores else "sdpa",
                     checkpointing=checkpointing, device_kind="cpu")
    return params * (4 + 4 + 8 + 4) + activation_bytes_of(m)


def activation_bytes_of(m: MemoryInputs) -> int:
    """Saved activations (with `m`'s checkpointing) plus the larger transient of backward."""
    a = activation_bytes(m)
    layers = a["layers_checkpointed"] if m.checkpointing else a["layers"]
    return layers + a["head"] + max(a["logits"], a["backward_working_set"])
