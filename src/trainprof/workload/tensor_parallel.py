"""Tensor parallel on the GPT blocks (Megatron-LM's split, through DTensor's parallelize_module).

Per block: the attention's qkv and the MLP's fc column-wise (each rank computes its heads /
its slice of the hidden layer), their output projections row-wise (partial sums all-reduced
over the `tp` group: two all_reduces per block forward, two in backward). Embeddings, norms
and the tied head stay replicated: every tp rank computes them alike.

qkv's rows are [q; k; v]; a column-wise shard of them would give rank 0 all of q and part of
k. The rows are therefore laid out [q_0, k_0, v_0, q_1, k_1, v_1, ...] (x_r = rank r's heads)
before sharding, so each rank's shard is its own heads' q, k and v; attention reads its
local width from the projection's output (workload/model.py). The same function as the
unsplit model (tested: same loss as one process).
"""

from __future__ import annotations

from typing import Any

import torch


def _interleave_qkv(lin: torch.nn.Linear, tp: int) -> None:
    """Reorder qkv's output rows from [q; k; v] to [q_0, k_0, v_0, q_1, ...] (tp chunks each)."""
    out = lin.weight.shape[0]
    c = out // 3
    idx = torch.arange(out).view(3, tp, c // tp).transpose(0, 1).reshape(-1)
    with torch.no_grad():
        lin.weight.copy_(lin.weight[idx])
        if lin.bias is not None:
            lin.bias.copy_(lin.bias[idx])


def parallelize(model: Any, tp_mesh: Any) -> None:
    """Shard every block of `model` (a workload GPT) over `tp_mesh` in place."""
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    tp = tp_mesh.size()
    for block in model.blocks:
        _interleave_qkv(block.attn.qkv, tp)
        parallelize_module(block, tp_mesh, {
            "attn.qkv": ColwiseParallel(), "attn.proj": RowwiseParallel(),
            "mlp.fc": ColwiseParallel(), "mlp.proj": RowwiseParallel(),
        })
