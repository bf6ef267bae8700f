"""Per-GPU training memory of a decoder for a layout, term by term (bytes).

**Model states** (per parameter this GPU's model-parallel shard holds, n = N/(tp·pp) on the
heaviest stage):

    fp32                       weights 4, gradients 4, optimizer states
    bf16/fp16, DDP (autocast)  weights 4 + a 16-bit copy of matmul weights 2, gradients 4:
                               18 B/param with AdamW (seed 001; HF "model memory anatomy")
    bf16/fp16, ZeRO 1-3        16-bit weights 2, 16-bit gradients 2, fp32 master 4 + states:
                               16 B/param with AdamW (Rajbhandari et al. 2020 §3.1, K = 12)
    bf16/fp16, FSDP            sharded fp32 weights 4, gradients 4, states (16-bit units gathered)
    bf16/fp16, FSDP + autocast sharded fp32 weights 4, gradients 4, states, and autocast's unsharded
                               16-bit copies 2 (fp32 units gathered: torch FSDP2 without
                               MixedPrecisionPolicy, as our workload runs it)

optimizer states: AdamW 8 (two fp32 moments), 8-bit AdamW 2 (Dettmers et al. 2022,
block-wise quantised moments; the per-block scales are <0.2%), SGD with momentum 4,
Adafactor 4·(rows + cols) per matrix, 4 per vector element (Shazeer & Stern 2018: factored
second moment, no first moment: torch.optim.Adafactor's defaults; a fused QKV is one matrix).

ZeRO stage 1 / 2 / 3 divides master + states / + gradients / + weights by dp; FSDP divides
all three. Offload `optimizer` moves master + states (and fp32 gradients) to the host
(ZeRO-Offload, Ren et al. 2021); `params` moves the weights and gradients too (ZeRO-Infinity,
FSDP CPUOffload): the GPU keeps only the units it is computing with.

**Activations** per layer and micro-batch (Korthikanti et al. 2022 §4, in elements per
token; h width, k kv width, f MLP width, a heads, s sequence, t tensor-parallel ranks):

    replicated unless sequence-parallel (÷t with SP): 2 norm inputs 2h, QKV input h,
        MLP input h, 2 dropout masks 2h (1 B each)
    split over t: Q, K, V (h + 2k), attention-projection input h, MLP 2f (plain: GELU
        input, down input) or 4f (gated: gate, up, act(gate), down input), and the scores
        a·s (eager: softmax output, + dropout mask and output) or flash's logsumexp (a, fp32)

With h = k, f = 4h, dropout, eager and 16 bit this is eq. (1), s·b·h·(34 + 5·a·s/h), with
TP eq. (2) s·b·h·(10 + 24/t + 5·a·s/(h·t)), with TP + SP eq. (4) s·b·h/t·(34 + 5·a·s/h).
Selective recompute keeps everything but the scores (§5: 34·s·b·h/t with SP); full
recompute keeps each block's input (2·s·b·h at 16 bit, /t with SP) plus one block's full
set while it is recomputed. fp32 doubles every 16-bit term; under autocast the residual
stream (norm inputs, block inputs) stays fp32. Pipeline 1F1B: the first stage holds
min(pp, grad_accum) micro-batches of its L/pp layers (§4.2.3).

**Temporaries**: the loss backward holds three fp32 logit-sized tensors (12 B per logit,
÷t with a vocab-parallel loss); the backward working set (MLP activation gradients, the
residual gradient, the head's weight gradient, less the head's activations and the
down-projection input backward has released by then); foreach AdamW's one full-size fp32 list
(torch.optim: √v) in the step; DDP's gradient buckets (a second copy of the gradients unless
gradient_as_bucket_view: torch DDP docs); ZeRO 1/2's reduce bucket (reduce_bucket_size,
DeepSpeed default 5e8 elements); ZeRO-3/FSDP's gathered units (two blocks in flight plus one
block's unsharded gradients, and the root unit: embeddings and head).

**Runtime** (constants, given by the caller with their source: jobs/plan.py): the CUDA
context and kernels, NCCL's buffers per communicator, a CPU process's allocator overhead.

Peak = runtime + max(backward start: states + saved activations + the larger transient,
optimizer step: states + gradients + step temporaries), as analysis/run/memory.py for our GPT.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from trainprof.analysis.plan.layout import Layout
from trainprof.analysis.plan.shape import ModelShape
from trainprof.errors import UsageError

FP32, HALF = 4, 2
OPT_BYTES = {"adamw": 8, "adamw8bit": 2, "sgd": 4}  # per parameter; adafactor from the shape
ZERO_REDUCE_BUCKET = 500_000_000  # DeepSpeed zero_optimization.reduce_bucket_size default (elements)
LOGIT_BYTES = 12  # three live fp32 B·T·V tensors in the loss backward (measured: analysis/run/memory.py)


@dataclass(frozen=True)
class Runtime:
    """What the process costs besides the model: stated constants with their sources."""

    context_bytes: int = 0
    """CUDA context + loaded kernels (or a CPU process's allocator/runtime overhead)"""
    nccl_bytes_per_group: int = 0
    """NCCL buffers per communicator (one per parallel dimension of size > 1)"""
    device_kind: str = "cuda"
    """cuda or cpu: which ops autocast runs in fp32 (softmax on CUDA)"""


def check(shape: ModelShape, lay: Layout) -> None:
    """The layout must split the model evenly."""
    if shape.n_layer % lay.pp:
        raise UsageError(f"layout: pp (--pp) {lay.pp} must divide the model's {shape.n_layer} layers")
    if shape.n_head % lay.tp or shape.kv_heads % lay.tp:
        raise UsageError(f"layout: tp (--tp) {lay.tp} must divide the model's {shape.n_head} heads and "
                         f"{shape.kv_heads} key/value heads")
    if lay.seq_len > shape.context_len and shape.learned_positions:
        raise UsageError(f"layout: seq_len (--seq-len) {lay.seq_len} is longer than the model's "
                         f"{shape.context_len}-token position table")


# ---- model states ----------------------------------------------------------------------
def local_params(shape: ModelShape, lay: Layout) -> int:
    """Parameters this GPU's tensor/pipeline shard holds on the heaviest stage (norms and
    biases counted as split too: <0.1% at these sizes)."""
    if shape.params:
        return -(-shape.params // (lay.tp * lay.pp))
    blocks = shape.n_layer // lay.pp * shape.block_params()
    emb = shape.embedding_params()
    if lay.pp > 1:  # the first stage has the token table, the last the head: the larger of the two
        first = emb - (0 if shape.tied else shape.vocab_size * shape.d_model) - shape.norm_params()
        last = shape.vocab_size * shape.d_model + shape.norm_params()
        emb = max(first, last)
    return -(-(blocks + emb) // lay.tp)


def adafactor_state_elements(shape: ModelShape) -> int:
    """Adafactor's factored second moment: rows + cols per matrix, the full size of vectors."""
    d, f, k = shape.d_model, shape.ffn_dim, shape.kv_dim
    qkv = [(d + 2 * k, d)] if shape.fused_qkv else [(d, d), (k, d), (k, d)]
    mats = [*qkv, (d, d)] + [(f, d)] * (3 if shape.gated else 2)
    per_block = sum(r + c for r, c in mats) + shape.block_params() - sum(r * c for r, c in mats)
    emb = (shape.vocab_size + d) * (1 if shape.tied else 2) + (shape.context_len + d) * shape.learned_positions
    return shape.n_layer * per_block + emb + shape.norm_params()


def autocast_copies(shape: ModelShape, lay: Layout) -> int:
    """Weights autocast keeps a 16-bit copy of (cached for backward): every matmul weight and
    linear bias; under full recompute each block's copy is made again while it is rebuilt, so
    only the head's and one block's are alive at once."""
    head = shape.vocab_size * shape.d_model
    cast = shape.matmul_params() + shape.linear_bias_params()
    if lay.recompute != "full":
        return cast
    return head + (cast - head) // shape.n_layer


def optimizer_bytes_per_param(shape: ModelShape, optimizer: str) -> float:
    if optimizer == "adafactor":
        return FP32 * adafactor_state_elements(shape) / shape.param_count_from_shape()
    return OPT_BYTES[optimizer]


def state_bytes(shape: ModelShape, lay: Layout) -> dict[str, int]:
    """Weights, autocast copies, gradients, master weights, optimizer states: per GPU and on the host."""
    n, dp = local_params(shape, lay), lay.dp
    half = lay.dtype != "fp32"
    deepspeed_half = half and lay.zero > 0
    w = HALF if deepspeed_half else FP32
    g = HALF if deepspeed_half else FP32
    master = FP32 if deepspeed_half else 0
    opt = optimizer_bytes_per_param(shape, lay.optimizer)
    copies = HALF * autocast_copies(shape, lay) / max(1, shape.param_count()) if lay.autocast else 0
    shard_w = dp if (lay.zero == 3 or lay.fsdp) else 1
    shard_g = dp if (lay.zero >= 2 or lay.fsdp) else 1
    shard_o = dp if (lay.zero >= 1 or lay.fsdp) else 1
    gpu = {
        "weights": n * w / shard_w,
        "weights_16bit": n * copies,
        "grads": n * g / shard_g,
        "master_weights": n * master / shard_o,
        "optimizer_states": n * opt / shard_o,
    }
    host = dict.fromkeys(gpu, 0.0)
    moved = {"optimizer": ("master_weights", "optimizer_states"),
             "params": ("weights", "grads", "master_weights", "optimizer_states")}.get(lay.offload, ())
    for k in moved:
        host[k], gpu[k] = gpu[k], 0.0
    if lay.offload == "optimizer":  # ZeRO-Offload: fp32 gradients for the CPU Adam live on the host
        host["grads"] = n * FP32 / shard_g
    return {**{k: round(v) for k, v in gpu.items()}, **{f"host_{k}": round(v) for k, v in host.items()}}


# ---- activations -----------------------------------------------------------------------
def layer_terms(shape: ModelShape, lay: Layout, s: int, b: int, device_kind: str = "cuda") -> dict[str, int]:
    """Bytes of one block's saved activations for one micro-batch, on one GPU (÷t as split)."""
    h, k, f, a, t = shape.d_model, shape.kv_dim, shape.ffn_dim, shape.n_head, lay.tp
    e = FP32 if lay.dtype == "fp32" else HALF
    res = FP32 if lay.dtype == "fp32" or lay.autocast else HALF  # autocast: the residual stream stays fp32
    rep = t if (lay.sequence_parallel and t > 1) else 1  # what sequence parallelism divides
    tok = s * b
    stats = 1 if shape.rmsnorm else 2  # LayerNorm saves mean and rstd per token, RMSNorm rstd
    terms = {
        "norm_inputs": 2 * res * h * tok // rep,
        "norm_stats": 2 * stats * FP32 * tok // rep,
        "qkv_input": e * h * tok // rep,
        "mlp_input": e * h * tok // rep,
        "q_k_v": e * (h + 2 * k) * tok // t,
        "attn_proj_input": e * h * tok // t,
        "mlp": e * (4 if shape.gated else 2) * f * tok // t,
    }
    if shape.dropout:
        terms["dropout_masks"] = 2 * h * tok // rep
    if lay.attention == "eager":
        if lay.recompute != "selective":  # selective recompute rebuilds the attention core
            score = (FP32 + HALF) if (lay.autocast and device_kind == "cuda") else e  # CUDA autocast: fp32 softmax + 16-bit copy
            terms["attn_scores"] = (score + (1 + e if shape.dropout else 0)) * a * s * tok // t
            terms["attn_mask"] = s * s  # the bool causal mask masked_fill keeps (shared over batch and heads)
    else:
        terms["attn_logsumexp"] = FP32 * a * tok // t
    return terms


def activation_bytes(shape: ModelShape, lay: Layout, device_kind: str = "cuda") -> dict[str, int]:
    """Saved activations on the heaviest stage (blocks, the head) and the backward transients."""
    s, b, t = lay.seq_len or shape.context_len, lay.micro_batch, lay.tp
    h, v = shape.d_model, shape.vocab_size
    e = FP32 if lay.dtype == "fp32" else HALF
    res = FP32 if lay.dtype == "fp32" or lay.autocast else HALF
    rep = t if (lay.sequence_parallel and t > 1) else 1
    layer = sum(layer_terms(shape, lay, s, b, device_kind).values())
    stage_layers = shape.n_layer // lay.pp
    in_flight = min(lay.pp, lay.grad_accum) if lay.pp > 1 else 1  # 1F1B's first stage
    if lay.recompute == "full":
        blocks = stage_layers * in_flight * (res * h * s * b // rep) + layer  # inputs, + one block rebuilt
    else:
        blocks = stage_layers * in_flight * layer
    head = (res * h * s * b + 2 * FP32 * s * b) // rep + e * h * s * b // rep + 8 * s * b  # final norm in, head in, ids
    logits = LOGIT_BYTES * s * b * v // t
    g = HALF if (lay.dtype != "fp32" and lay.zero) else FP32
    # inside the last block's MLP backward: its activation gradients, the residual gradient and
    # the head's weight gradient (made first), net of what backward has released by then: the
    # head's saved activations and the down-projection input (analysis/run/memory.py, measured)
    working = (e * (3 if shape.gated else 2) * shape.ffn_dim * s * b // t + res * h * s * b
               + g * v * h // t - e * shape.ffn_dim * s * b // t - (head if lay.pp == 1 else 0))
    return {"per_layer": layer, "blocks": blocks, "head": head if lay.pp == 1 else 0,
            "logits": logits if lay.pp == 1 else 0, "backward_working_set": working,
            "in_flight_micro_batches": in_flight, "stage_layers": stage_layers}


# ---- the whole GPU ---------------------------------------------------------------------
def temporaries(shape: ModelShape, lay: Layout, states: dict[str, int], foreach: bool = True) -> dict[str, int]:
    n = local_params(shape, lay)
    e = FP32 if lay.dtype == "fp32" else HALF
    out = {"optimizer_step": 0, "ddp_buckets": 0, "zero_buckets": 0, "gathered_units": 0}
    if foreach and lay.optimizer == "adamw" and not lay.zero and lay.offload == "none":
        out["optimizer_step"] = FP32 * n // (lay.dp if lay.fsdp else 1)  # torch foreach AdamW: √v list
    if lay.dp > 1 and not lay.sharded:
        out["ddp_buckets"] = states["grads"]
    if lay.zero in (1, 2) and lay.dp > 1:
        out["zero_buckets"] = HALF * min(ZERO_REDUCE_BUCKET, n) if lay.dtype != "fp32" else FP32 * min(ZERO_REDUCE_BUCKET, n)
    if (lay.zero == 3 or lay.fsdp) and lay.dp > 1:
        unit = shape.block_params() // lay.tp
        root = shape.embedding_params() // lay.tp
        g = FP32 if lay.fsdp_autocast else e  # autocast over FSDP gathers the fp32 shards
        out["gathered_units"] = g * (3 * unit + root)  # two blocks gathered + one block's grads, and the root
    return out


def plan_memory(shape: ModelShape, lay: Layout, runtime: Runtime = Runtime(), *, foreach: bool = True) -> dict:
    """Every term of one GPU's memory for `lay`, the two phase peaks and the peak."""
    check(shape, lay)
    st = state_bytes(shape, lay)
    act = activation_bytes(shape, lay, runtime.device_kind)
    tmp = temporaries(shape, lay, st, foreach)
    resident = st["weights"] + st["weights_16bit"] + st["master_weights"] + st["optimizer_states"]
    # gradients exist at the start of backward when they persist between micro-batches or
    # live in preallocated buffers (DeepSpeed); else backward builds them as activations go
    grads_live = lay.grad_accum > 1 or lay.zero > 0
    transient = max(act["logits"], act["backward_working_set"])
    fwd_bwd = (resident + (st["grads"] if grads_live else 0) + act["blocks"] + act["head"] + transient
               + tmp["ddp_buckets"] + tmp["zero_buckets"] + tmp["gathered_units"])
    step = resident + st["grads"] + tmp["optimizer_step"] + tmp["ddp_buckets"] + tmp["zero_buckets"]
    groups = sum(1 for x in (lay.dp, lay.tp, lay.pp) if x > 1)
    overhead = runtime.context_bytes + groups * runtime.nccl_bytes_per_group
    peak_model = max(fwd_bwd, step)
    # the terms the peak is made of (the rest of it is temporaries): gradients only where they
    # exist at that moment, activations only in forward/backward
    parts = {"weights_bytes": st["weights"] + st["weights_16bit"], "optimizer_bytes": resident - st["weights"]
             - st["weights_16bit"]}
    if fwd_bwd >= step:
        parts.update({"grads_bytes": st["grads"] if grads_live else 0, "activations_bytes": act["blocks"] + act["head"]})
    else:
        parts["grads_bytes"] = st["grads"]
    parts = {k: v for k, v in parts.items() if v or k != "grads_bytes"}
    return {
        "params": shape.param_count(),
        "local_params": local_params(shape, lay),
        "states": st,
        "activations": act,
        "temporaries": tmp,
        "runtime": {"context_bytes": runtime.context_bytes, "nccl_bytes": groups * runtime.nccl_bytes_per_group,
                    "nccl_groups": groups},
        "weights_bytes": st["weights"] + st["weights_16bit"],
        "grads_bytes": st["grads"],
        "optimizer_bytes": st["master_weights"] + st["optimizer_states"],
        "activations_bytes": act["blocks"] + act["head"],
        "temporaries_bytes": peak_model - sum(parts.values()),
        "in_peak": [*parts, "temporaries_bytes", "runtime_bytes"],
        "runtime_bytes": overhead,
        "peak_forward_backward_bytes": fwd_bwd + overhead,
        "peak_optimizer_step_bytes": step + overhead,
        "peak_bytes": peak_model + overhead,
        "peak_phase": "forward/backward" if fwd_bwd >= step else "optimizer step",
        "host_bytes": sum(v for k, v in st.items() if k.startswith("host_")),
        "layout": asdict(lay),
    }


def bytes_per_param(shape: ModelShape, lay: Layout) -> float:
    """Model-state bytes per parameter this layout keeps on one GPU, before sharding (dp = 1)."""
    from dataclasses import replace

    one = replace(lay, dp=1, tp=1, pp=1)
    st = state_bytes(shape, one)
    n = local_params(shape, one)
    return (st["weights"] + st["weights_16bit"] + st["grads"] + st["master_weights"] + st["optimizer_states"]) / n
