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
    n_matmul_params_in_blocks: int, n_layer: int, d_model: int, seq_len: int
) -> int:
    """Extra forward FLOPs when every block is recomputed (full activation checkpointing):
    one more forward of the blocks (2N_blocks + 4·L·d·T per token); the head is not recomputed."""
    return 2 * n_matmul_params_in_blocks + 4 * n_layer * d_model * seq_len
