"""What fits: the largest micro-batch for a layout, and the layouts of G GPUs that fit,
cheapest first. Every answer is plan_memory's arithmetic (no measurement)."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from trainprof.analysis.plan.layout import Layout
from trainprof.analysis.plan.memory import Runtime, plan_memory
from trainprof.analysis.plan.shape import ModelShape
from trainprof.errors import TrainprofError

MAX_MICRO_BATCH = 1 << 20
TP_MAX = 8  # tensor parallelism stays inside a node (NVLink): Narayanan et al. 2021 §3.3, takeaway #1
# Extra FLOPs of recompute, as a share of a step's 6N: full re-runs each forward (2N of 6N,
# Korthikanti §5: 33%); selective re-runs only the attention core (their Table 4: 2.7% for GPT-3 175B,
# more at long sequences: computed from the shape below).
FULL_RECOMPUTE = 1 / 3
# Communication volume per step relative to DDP's all-reduce (Rajbhandari et al. 2020 §7: ZeRO 1/2 the
# same, stage 3 1.5×; FSDP full shard as stage 3).
COMM = {"ddp": 1.0, "zero1": 1.0, "zero2": 1.0, "zero3": 1.5, "fsdp": 1.5}


def fits(shape: ModelShape, lay: Layout, runtime: Runtime, capacity: int) -> bool:
    return plan_memory(shape, lay, runtime)["peak_bytes"] <= capacity


def max_micro_batch(shape: ModelShape, lay: Layout, runtime: Runtime, capacity: int) -> int:
    """The largest b with plan_memory(b) ≤ capacity (0: not even one sequence). The peak only
    grows with b, so doubling then bisection is exact."""
    if not fits(shape, replace(lay, micro_batch=1), runtime, capacity):
        return 0
    lo = 1
    while lo < MAX_MICRO_BATCH and fits(shape, replace(lay, micro_batch=lo * 2), runtime, capacity):
        lo *= 2
    hi = min(lo * 2, MAX_MICRO_BATCH + 1)  # first known (or assumed) not to fit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(shape, replace(lay, micro_batch=mid), runtime, capacity) else (lo, mid)
    return lo


def selective_share(shape: ModelShape, seq_len: int) -> float:
    """Selective recompute's extra FLOPs over 6N + 12·L·h·s: the attention core's forward
    (QKᵀ and A·V: 4·s·h per token per layer)."""
    core = 4 * shape.n_layer * shape.d_model * seq_len
    return core / (6 * shape.matmul_params() + 12 * shape.n_layer * shape.d_model * seq_len)


def cost(shape: ModelShape, lay: Layout) -> dict[str, float]:
    """Why one layout is slower than another, as fractions: recompute's extra FLOPs, the 1F1B
    bubble (p−1)/m (Narayanan et al. 2021 §2.2), the gradient/parameter traffic per step relative
    to DDP, and whether a step waits on PCIe (offload)."""
    s = lay.seq_len or shape.context_len
    extra = {"none": 0.0, "full": FULL_RECOMPUTE, "selective": selective_share(shape, s)}[lay.recompute]
    if lay.attention == "flash" and lay.recompute == "selective":
        extra = 0.0  # flash attention already recomputes the scores; selective adds nothing
    bubble = (lay.pp - 1) / lay.grad_accum if lay.pp > 1 else 0.0
    strategy = "fsdp" if lay.fsdp else f"zero{lay.zero}" if lay.zero else "ddp"
    slow = (1 + extra) * (1 + bubble) * (1.25 if lay.tp > 1 else 1.0)
    return {"recompute_extra": extra, "bubble": bubble, "comm_vs_ddp": COMM[strategy] if lay.dp > 1 else 0.0,
            "offload": lay.offload != "none", "slowdown": slow}


def candidate_layouts(shape: ModelShape, base: Layout, gpus: int) -> Iterator[Layout]:
    """Every split of `gpus` into dp·tp·pp the model allows, each sharding and recompute."""
    for tp in (t for t in (1, 2, 4, 8) if t <= min(TP_MAX, gpus) and gpus % t == 0
               and shape.n_head % t == 0 and shape.kv_heads % t == 0):
        for pp in (p for p in range(1, gpus // tp + 1) if (gpus // tp) % p == 0 and shape.n_layer % p == 0):
            dp = gpus // (tp * pp)
            for zero, fsdp in ((0, False), (1, False), (2, False), (3, False), (0, True)):
                if dp == 1 and (zero or fsdp):
                    continue  # nothing to shard over
                for rc in ("none", "selective", "full"):
                    if rc == "selective" and base.attention == "flash":
                        continue  # the same memory as none under flash attention
                    for off in ("none", "optimizer", "params"):
                        if (off == "optimizer" and not zero) or (off == "params" and not (zero == 3 or fsdp)):
                            continue
                        yield replace(base, dp=dp, tp=tp, pp=pp, zero=zero, fsdp=fsdp, recompute=rc, offload=off,
                                      fsdp_autocast=fsdp and base.fsdp_autocast)  # how the user's FSDP runs


def layouts_that_fit(shape: ModelShape, base: Layout, gpus: int, runtime: Runtime, capacity: int,
                     limit: int = 20) -> list[dict]:
    """Layouts of `gpus` GPUs where base.micro_batch fits, cheapest first: no offload before
    offload, then the least slowdown (recompute × bubble × TP), then the least traffic, then
    the smaller peak."""
    rows = []
    for lay in candidate_layouts(shape, base, gpus):
        try:
            pm = plan_memory(shape, lay, runtime)
        except TrainprofError:
            continue
        if pm["peak_bytes"] > capacity:
            continue
        c = cost(shape, lay)
        rows.append({"layout": lay, "name": lay.name(), "peak_bytes": pm["peak_bytes"], "cost": c,
                     "max_micro_batch": max_micro_batch(shape, lay, runtime, capacity)})
    rows.sort(key=lambda r: (r["cost"]["offload"], round(r["cost"]["slowdown"], 6), r["cost"]["comm_vs_ddp"],
                             r["peak_bytes"]))
    return rows[:limit]
