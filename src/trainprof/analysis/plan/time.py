"""Time to train N tokens: FLOPs / (GPUs × dense peak × MFU).

Training FLOPs per token: 6·N + 12·L·h·s (PaLM, Chowdhery et al. 2022, App. B; cost/flops.py),
N the matmul parameters. Recompute is not counted: MFU is model FLOPs over the peak, so what
recompute costs shows as a lower MFU (a measured one includes it).

Seed 003's figure comes from Lambda's estimate (https://lambdalabs.com/blog/demystifying-gpt-3):
3.14e23 FLOPs (6 · 175e9 · 300e9 tokens) at 28 TFLOP/s on one V100 = 355 GPU-years.
"""

from __future__ import annotations

from trainprof.analysis.cost.flops import gpt_train_flops_per_token
from trainprof.analysis.plan.shape import ModelShape

YEAR_S = 365 * 86400


def train_flops_per_token(shape: ModelShape, seq_len: int) -> int:
    return gpt_train_flops_per_token(shape.matmul_params(), shape.n_layer, shape.d_model, seq_len)


def time_to_train(shape: ModelShape, *, tokens: float, seq_len: int, gpus: int, peak_tflops: float,
                  mfu: float) -> dict:
    """Seconds (and the pieces) to train `tokens` on `gpus` GPUs of `peak_tflops` at `mfu`."""
    if not (tokens > 0 and gpus > 0 and peak_tflops > 0 and 0 < mfu <= 1):
        raise ValueError("tokens, gpus and the peak must be > 0 and mfu in (0, 1]")
    per_token = train_flops_per_token(shape, seq_len)
    total = per_token * tokens
    achieved = gpus * peak_tflops * 1e12 * mfu
    seconds = total / achieved
    return {"tokens": tokens, "flops_per_token": per_token, "six_n_flops_per_token": 6 * shape.matmul_params(),
            "total_flops": total, "gpus": gpus, "peak_tflops": peak_tflops, "mfu": mfu,
            "achieved_flops_per_s": achieved, "seconds": seconds, "days": seconds / 86400,
            "gpu_years": seconds * gpus / YEAR_S, "tokens_per_s": tokens / seconds}
