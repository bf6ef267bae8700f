"""What the optimizer finding advises, from the phase's split and the optimizer in use
(issue #39 item 4: a communication-bound custom distributed optimizer was told "use
AdamW(fused=True)" on every rank).

The split (analysis/timeline/host_work.phase_split) is the optimizer phase on the GPU cut
into compute, communication not under compute, copies and idle; the largest part is what
bounds the phase. The class comes from the trace's `Optimizer.step#<Class>.step` ranges
(torch.optim names them so); the fix names that class, and only a class that has the form
advised: `fused=True` exists for torch.optim's Adam, AdamW and SGD (CUDA), `foreach=True`
for the other torch.optim classes; any other class gets advice that does not name a flag it
may not have.
"""

from __future__ import annotations

from trainprof.recordtypes.base import or_default

PARTS = ("compute", "communication", "copy", "idle")
FUSED = frozenset({"Adam", "AdamW", "SGD"})  # torch.optim classes with fused=True on CUDA
FOREACH = frozenset({"Adadelta", "Adagrad", "Adamax", "ASGD", "NAdam", "RAdam", "RMSprop", "Rprop"})
ZERO = "ZeroRedundancyOptimizer"


def phase_parts(opt) -> dict[str, float] | None:
    """The split of the phase in µs, or None for a record without it (written before issue
    #39) or a phase with no GPU work."""
    parts = {p: float(or_default(getattr(opt, f"{p}_us", None), 0.0) or 0.0) for p in PARTS}
    return parts if sum(parts.values()) > 0 else None


def bound_by(parts: dict[str, float]) -> str:
    """The largest part (ties: compute, the advice that existed before the split)."""
    return max(PARTS, key=lambda p: (parts[p], p == "compute"))


def split_text(parts: dict[str, float], phase_us: float) -> str:
    total = phase_us or sum(parts.values())
    shown = ", ".join(f"{p} {parts[p] / 1e3:,.1f} ms" for p in PARTS if parts[p] > 0)
    return (f"inside Optimizer.step the GPU spent {total / 1e3:,.1f} ms: {shown} "
            f"({bound_by(parts)}-bound)")


def comm_fix(classes: list[str]) -> str:
    """Overlap and bucketing advice for an optimizer whose step is mostly communication."""
    named = ", ".join(classes) or "the optimizer"
    if ZERO in classes:
        return ("ZeroRedundancyOptimizer(..., overlap_with_ddp=True) with DDP's ddp_zero_hook, so the parameter "
                "broadcasts overlap the backward pass; parameters_as_bucket_view=True so they go as buckets, not "
                "one collective per tensor")
    return (f"{named} runs its collectives inside step(), where no compute hides them: issue them as fewer, larger "
            "collectives (flatten the parameters or shards into buckets), start them asynchronously "
            "(async_op=True) and wait just before each result is used, overlap them with the next forward (prefetch "
            "the next layer's shards, as FSDP does) or with the backward (reduce gradients per bucket as they are "
            "ready); communicate in bf16 where the optimizer allows. A fused update kernel would not help: the "
            "phase is communication-bound")


def compute_fix(classes: list[str], impl: str | None) -> str:
    """Fused or multi-tensor advice for the class in use (a run record's `impl` is the
    reference workload's AdamW implementation: forloop, foreach or fused)."""
    low = (impl or "").lower()
    ref = "Reference workload: --optimizer fused"
    if not classes:  # a run record, or a trace without Optimizer.step#<Class> ranges (trainprof.optimizer)
        if "foreach" in low or "multi_tensor" in low:  # already batched: foreach=True is what it runs
            return ("torch.optim.AdamW(params, fused=True): foreach already batches the per-tensor loop, fused does "
                    f"the whole update in a few kernels; fewer, larger parameter tensors. {ref}")
        return f"torch.optim.AdamW(params, fused=True) (or foreach=True); fewer, larger parameter tensors. {ref}"
    fixes = []
    for c in classes:
        if c in FUSED:
            fixes.append(f"torch.optim.{c}(params, ..., fused=True) (or foreach=True)")
        elif c in FOREACH:
            fixes.append(f"torch.optim.{c}(params, ..., foreach=True)")
        else:
            fixes.append(f"{c}: a multi-tensor form of its update (torch._foreach_* ops over the parameter list) or "
                         "torch.compile of its step() (the compiled optimizer fuses the per-tensor loop)")
    return "; ".join(fixes) + "; fewer, larger parameter tensors"
