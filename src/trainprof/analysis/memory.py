"""A first-order estimate of training memory for the GPT workload (bytes).

Used before a CPU run to refuse a micro-batch that cannot fit (on CPU an out-of-memory
ends in the kernel's OOM killer, which no program can catch; on CUDA we catch the real
OutOfMemoryError instead). Terms, per the seeds' memory breakdown and Korthikanti et al.
2022 ("Reducing Activation Recomputation in Large Transformer Models", §4):

* weights 4 B + gradients 4 B + AdamW moments 8 B per parameter (fp32 master weights);
* saved activations per layer ≈ 17·B·T·d elements (34·s·b·h bytes at 2 B/element, no
  dropout masks), plus 2.5·B·H·T² elements when the attention scores are materialised
  (manual attention; fused SDPA does not store them); with activation checkpointing only
  each block's input (B·T·d) is kept, plus one block's activations during recompute;
* logits: B·T·V fp32 values, their log-softmax and their gradient ≈ 12 B per logit.
"""

from __future__ import annotations


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
    state = params * (4 + 4 + 8)
    tokens = micro_batch * seq_len
    per_layer = 17 * tokens * d_model
    if materialised_scores:
        per_layer += int(2.5 * micro_batch * n_head * seq_len * seq_len)
    if checkpointing:
        acts = n_layer * tokens * d_model + per_layer
    else:
        acts = n_layer * per_layer
    logits = 12 * tokens * vocab_size
    return state + acts * activation_bytes + logits
