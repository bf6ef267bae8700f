"""A GPT-2 family decoder: learned positions, pre-LayerNorm, GELU MLP, tied LM head, SDPA.

Follows GPT-2 (Radford et al. 2019) as nanoGPT writes it, with two knobs the tuner needs:
`attention` (fused SDPA kernels vs the explicit softmax(QKᵀ/√d)·V) and activation
checkpointing: per block (full) or of attention's core only (selective, Korthikanti et al.
2022 §5: q, k, v are kept, the scores and softmax are rebuilt in backward).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from trainprof.workload.config import ModelConfig


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig, attention: str, selective: bool = False) -> None:
        super().__init__()
        if cfg.d_model % cfg.n_head:
            raise ValueError(f"d_model {cfg.d_model} is not divisible by n_head {cfg.n_head}")
        self.n_head = cfg.n_head
        self.head_dim = cfg.d_model // cfg.n_head
        self.attention = attention
        self.selective = selective
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        if attention == "manual":
            mask = torch.tril(torch.ones(cfg.context_len, cfg.context_len, dtype=torch.bool))
            self.register_buffer("mask", mask.view(1, 1, cfg.context_len, cfg.context_len), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        qkv = self.qkv(x)
        # C = this rank's width: d_model, or d_model/tp under tensor parallel, where the qkv
        # rows are laid out [q_r, k_r, v_r] per rank (workload/tensor_parallel.py)
        C = qkv.size(-1) // 3
        q, k, v = qkv.split(C, dim=2)
        # (B, T, C) → (B, H, T, C/H)
        q, k, v = (t.view(B, T, C // self.head_dim, self.head_dim).transpose(1, 2) for t in (q, k, v))
        if self.selective and self.training and torch.is_grad_enabled():
            # saves q, k, v (views of qkv, kept anyway); the core's 2·T·d FLOPs per token run twice
            y = checkpoint(self.core, q, k, v, use_reentrant=False)
        else:
            y = self.core(q, k, v)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

    def core(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """softmax(QKᵀ/√d)·V, causal."""
        if self.attention == "sdpa":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        # Materialises the B·H·T·T score matrix: the memory-bound path flash attention avoids.
        T = q.size(-2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))
        return F.softmax(att, dim=-1) @ v


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model)
        self.proj = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))  # GPT-2's tanh GELU


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, attention: str, selective: bool = False) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg, attention, selective)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg: ModelConfig, *, attention: str = "sdpa", checkpointing: bool = False,
                 recompute: str = "full"):
        """`recompute` (with `checkpointing`): full (each block) or selective (attention's core)."""
        super().__init__()
        self.cfg = cfg
        selective = checkpointing and recompute == "selective"
        self.checkpointing = checkpointing and not selective
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.wpe = nn.Embedding(cfg.context_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg, attention, selective) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying (GPT-2)
        self.apply(self._init)
        # GPT-2: residual projections scaled by 1/√(2L) so the residual stream's variance
        # does not grow with depth.
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def num_params(self, non_embedding: bool = False) -> int:
        """Unique parameters (the tied head counts once); non_embedding drops wpe, like nanoGPT."""
        n = sum(p.numel() for p in self.parameters())
        return n - self.wpe.weight.numel() if non_embedding else n

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        B, T = idx.shape
        if T > self.cfg.context_len:
            raise ValueError(f"sequence of {T} tokens exceeds the context of {self.cfg.context_len}")
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            if self.checkpointing and self.training and torch.is_grad_enabled():
                # Non-reentrant: works with autocast and torch.compile, recommended by PyTorch.
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))
