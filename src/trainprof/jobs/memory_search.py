"""The largest micro-batch that fits, and the memory ladder, measured with memory probes.

Search: double the micro-batch from 1 until a probe does not fit, then close the bracket
(last fit, first miss) until the two are adjacent. Saved activations grow linearly with
the micro-batch, so each midpoint is read off a straight line through the two largest
measured fits (one or two probes usually land it); after two guided steps in a row that
fail to halve the bracket the next one bisects, so the worst case stays logarithmic. A
probe that does not fit is an out-of-memory caught in its child process; the search goes on.

Ladder (the techniques of Hugging Face's "Methods and tools for efficient training on a
single GPU", cheapest in speed first): baseline → gradient accumulation
(same global batch, smaller micro-batch) → selective recompute (attention's core) → full
activation checkpointing → optimizer memory (foreach → for-loop → fused AdamW) → bf16
autocast → FSDP on 2 ranks (gloo on CPU: the per-rank peak) → Adafactor (one rank) → CPU
offload of the optimizer (planned for a GPU, not run). Each measured rung keeps the previous
ones (Adafactor replaces AdamW in the last one-rank rung) and runs in its own probe(s).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from trainprof.jobs.memory_probe import ProbeResult
from trainprof.workload.config import TrainConfig

MAX_MICRO_BATCH = 1 << 16  # a ceiling for the doubling, far past any real device


@dataclass
class SearchResult:
    max_micro_batch: int
    """0 when even one sequence does not fit"""
    probes: list[ProbeResult] = field(default_factory=list)
    stopped: str = ""
    """bracketed (max fits, max+1 does not) | nothing fits | cap"""


def find_max_micro_batch(probe: Callable[[int], ProbeResult], *, limit_bytes: int | None,
                         cap: int = MAX_MICRO_BATCH) -> SearchResult:
    """`probe(b)` runs micro-batch b; its `.fits` decides. Returns the largest b that fits."""
    res = SearchResult(0)
    fits: dict[int, int | None] = {}  # micro-batch → bytes above baseline, for the fitted line

    def run(b: int) -> bool:
        r = probe(b)
        res.probes.append(r)
        if r.fits:
            fits[b] = r.above_baseline_bytes
        return r.fits

    lo, b = 0, 1
    while run(b):
        lo = b
        if b >= cap:
            res.max_micro_batch, res.stopped = lo, "cap"
            return res
        b = min(2 * b, cap)
    hi = b
    if lo == 0:
        res.stopped = "nothing fits"
        return res
    slow = 0  # guided steps in a row that did not halve the bracket
    while hi - lo > 1:
        width = hi - lo
        mid = _interpolate(fits, lo, hi, limit_bytes) if slow < 2 else None
        guided = mid is not None
        mid = mid if guided else (lo + hi) // 2
        if run(mid):
            lo = mid
        else:
            hi = mid
        slow = slow + 1 if guided and (hi - lo) * 2 > width else 0
    res.max_micro_batch, res.stopped = lo, "bracketed"
    return res


def _interpolate(fits: dict[int, int | None], lo: int, hi: int, limit: int | None) -> int | None:
    """Where the line through the two largest measured fits reaches `limit`, inside (lo, hi)."""
    pts = sorted((b, p) for b, p in fits.items() if p is not None)
    if limit is None or len(pts) < 2:
        return None
    (b0, p0), (b1, p1) = pts[-2], pts[-1]
    slope = (p1 - p0) / (b1 - b0)
    if slope <= 0:
        return None
    guess = b1 + int((limit - p1) // slope)
    return min(max(guess, lo + 1), hi - 1)


def fit_line(probes: list[ProbeResult]) -> dict[str, float] | None:
    """Least-squares peak = fixed + per_sample · micro-batch over the fits in the upper half
    of the range (b ≥ largest/2: small micro-batches can peak in the optimizer step, where
    activations play no part). The slope is the measured activation memory per sequence."""
    pts = [(r.config.micro_batch, r.above_baseline_bytes) for r in probes
           if r.fits and r.above_baseline_bytes is not None]
    if not pts:
        return None
    top = max(b for b, _ in pts)
    pts = sorted({b: p for b, p in pts if 2 * b >= top}.items())
    if len(pts) < 2:
        return None
    n = len(pts)
    mb = sum(b for b, _ in pts) / n
    mp = sum(p for _, p in pts) / n
    slope = sum((b - mb) * (p - mp) for b, p in pts) / sum((b - mb) ** 2 for b, _ in pts)
    return {"per_sample_bytes": slope, "fixed_bytes": mp - slope * mb, "points": n}


# ---- the ladder ------------------------------------------------------------------------
FSDP_RANKS = 2  # gloo ranks of the FSDP rung: the smallest sharding that shows the ÷N


@dataclass(frozen=True)
class Rung:
    name: str
    change: str
    """what this rung changes, in words"""
    config: TrainConfig | None
    """the configuration to measure; None: not run (see note)"""
    note: str = ""
    ranks: int = 1
    """processes the rung runs on (gloo ranks on CPU: jobs/memory_ranks.py); the peak is per rank"""
    plan: dict = field(default_factory=dict)
    """for a rung not run: what `plan` estimates instead, {"config", "layout" (Layout fields), "device"}"""


def accumulation_split(micro_batch: int) -> int | None:
    """Accumulation steps for the ladder's split of the micro-batch: 4, else 2, else none."""
    for k in (4, 2):
        if micro_batch % k == 0 and micro_batch >= k:
            return k
    return None


def ladder_rungs(base: TrainConfig) -> list[Rung]:
    """The memory ladder from `base` (resolved, explicit dtype); each rung `replace`s the last,
    except Adafactor (from the last one-rank rung: torch's Adafactor fails on FSDP2's DTensor
    shards, `aten.pow_` on a partial placement, torch 2.13) and CPU offload (planned, not run)."""
    assert base.micro_batch is not None, "the ladder starts from a resolved config"
    rungs = [Rung("baseline", f"micro-batch {base.micro_batch}, {base.dtype}, {_opt_name(base.optimizer)}", base)]
    cur = base
    k = accumulation_split(base.micro_batch)
    if k and cur.grad_accum == 1:
        cur = replace(cur, micro_batch=base.micro_batch // k, grad_accum=k)
        rungs.append(Rung("gradient accumulation", f"micro-batch {base.micro_batch} → {cur.micro_batch} × {k}",
                          cur, "same global batch in smaller micro-batches: activations shrink, gradients "
                          "persist between micro-batches"))
    else:
        rungs.append(Rung("gradient accumulation", "—", None, "micro-batch 1 or odd: nothing to split"))
    if not cur.activation_checkpointing:
        cur = replace(cur, activation_checkpointing=True, recompute="selective")
        rungs.append(Rung("selective recompute", "recompute attention's softmax(QKᵀ)V in backward", cur,
                          "Korthikanti et al. 2022 §5: keeps q, k, v, drops the T×T scores manual attention saves "
                          "(sdpa saves none: little to gain there); a few % more compute"))
    if cur.recompute != "full":
        cur = replace(cur, recompute="full")
        rungs.append(Rung("activation checkpointing", "recompute blocks in backward", cur,
                          "keeps only each block's input; ~1/3 more compute"))
    for opt, why in (("forloop", "one parameter at a time: no full-size foreach temporaries"),
                     ("fused", "one fused kernel updating in place")):
        if cur.optimizer not in (opt, "adafactor"):
            prev = cur.optimizer
            cur = replace(cur, optimizer=opt)
            rungs.append(Rung(f"{opt} AdamW", f"{prev} → {opt} AdamW", cur, why))
    if cur.dtype == "fp32":
        cur = replace(cur, dtype="bf16")
        rungs.append(Rung("bf16 autocast", "fp32 → bf16 autocast", cur,
                          "16-bit activations, plus 2 B/param 16-bit weight copies"))
    one_rank = cur
    if cur.optimizer != "adafactor":
        fsdp = replace(cur, strategy="fsdp")
        why = (f"per rank the 16 B/param of weights, gradients and AdamW states divide by {FSDP_RANKS} (ZeRO-3), "
               "activations do not; gathered blocks add back a little")
        change = f"full shard over {FSDP_RANKS} ranks, the same micro-batch each"
        if base.device.startswith("cpu"):  # gloo ranks on this machine's cores (jobs/memory_ranks.py)
            rungs.append(Rung(f"FSDP ({FSDP_RANKS} ranks)", change, fsdp, why, ranks=FSDP_RANKS))
        else:  # one probe per GPU would need a GPU per rank and NCCL: `run --nproc` measures it
            rungs.append(Rung(f"FSDP ({FSDP_RANKS} ranks)", change, None,
                              f"not measured on GPUs here (`trainprof run --nproc {FSDP_RANKS} --strategy fsdp` "
                              f"does); `plan` estimates the peak shown; {why}", ranks=FSDP_RANKS,
                              plan={"config": fsdp, "layout": {}, "device": "cuda"}))
        rungs.append(Rung("Adafactor", f"{one_rank.optimizer} AdamW → Adafactor, one rank", replace(one_rank,
                          optimizer="adafactor"),
                          "torch.optim.Adafactor: a row and a column statistic per matrix (R + C fp32) instead of "
                          "AdamW's two full moments (8 B/param); another optimizer: check the loss"))
    rungs.append(Rung("CPU offload (optimizer)", "optimizer states and master weights on the host", None,
                      OFFLOAD_NOTE[base.device.startswith("cpu")], plan={"config": one_rank, "layout": {"zero": 1, "offload": "optimizer"},
                                          "device": "cuda"}))
    return rungs


# [on a GPU, on a CPU]: the one-line reason the offload rung is planned, not measured
OFFLOAD_NOTE = ("not measured: the reference workload has no offload; `plan` estimates the peak shown on one GPU "
                "(ZeRO-Offload, Ren et al. 2021)",
                "not measured: on a CPU the host is the device, so offload moves nothing off it; `plan` estimates "
                "the peak shown on one GPU (ZeRO-Offload, Ren et al. 2021)")


def _opt_name(optimizer: str) -> str:
    return "Adafactor" if optimizer == "adafactor" else f"{optimizer} AdamW"
