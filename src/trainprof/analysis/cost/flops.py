"""Analytic FLOPs of a GPT-style decoder, for cross-checking the counted FLOPs.

Training FLOPs per token (PaLM, Chowdhery et al. 2022, App. B; nanoGPT's estimate_mfu):

    6·N + 12·L·H·Q·T

N = parameters that take part in matmuls (attention + MLP weights, and the LM head, which
is the tied token embedding), L layers, H heads, Q head size (H·Q = d_model), T sequence
length. 6 = 2 FLOPs per multiply-add × (1 forward + 2 backward). The attention term counts
the full T×T score matrix (QKᵀ and A·V, forward and backward) *without* the causal-mask
saving, the convention of PaLM, nanoGPT and torch's FlopCounterMode; a causal-aware count
would halve that term. Element-wise work (softmax, GELU, LayerNorm, biases) is ignored, as
in both references; it is <1% of FLOPs at GPT-2 sizes.
"""

from __future__ import annotations


def gpt_matmul_params(n_layer: int, d_model: int, vocab_size: int, mlp_ratio: int = 4) -> int:
    """Weights used in matmuls: per layer QKV (3d²) + proj (d²) + MLP (2·ratio·d²); + head (V·d)."""
    per_layer = 4 * d_model * d_model + 2 * mlp_ratio * d_model * d_model
    return n_layer * per_layer + vocab_size * d_model


def gpt_train_flops_per_token(
    n_matmul_params: int, n_layer: int, d_model: int, seq_len: int
) -> int:
    """6N + 12·L·d·T (H·Q = d)."""
    return 6 * n_matmul_params + 12 * n_layer * d_model * seq_len


def gpt_recompute_flops_per_token(
    n_layer: int, d_model: int, seq_len: int, mlp_ratio: int = 4
) -> int:
    """Extra forward FLOPs per token when every block is checkpointed (for HFU).

    A full re-run of a block's forward would cost 2·12·d² + 4·d·T per token and layer
    (matmul weights 4d² + 2·ratio·d²). PyTorch's non-reentrant checkpoint stops the re-run
    early, once every tensor backward needs is rebuilt, so each block's last matmul (the MLP
    down-projection, ratio·d² weights, whose output backward never reads) is not recomputed.
    We count what runs: 2·(4 + ratio)·d² + 4·d·T per layer.
    """
    return n_layer * (2 * (4 + mlp_ratio) * d_model * d_model + 4 * d_model * seq_len)
