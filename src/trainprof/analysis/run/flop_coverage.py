"""How much of the profiled operator time the FLOP count covers, and what it leaves uncovered.

MFU's numerator is the FLOPs FlopCounterMode has formulas for: matmuls, convolutions,
attention, and (collect/flops.py) the fused RNN kernels. An op without a formula counts 0,
silently: word_language_model's CPU LSTM ran as `aten::mkldnn_rnn_layer` and MFU read 20.3%
instead of 26.5% (issue #37). So the run says which share of operator time (the profiled
steps' top operators: GPU time, or self CPU time on a CPU trace) went to ops whose FLOPs were
counted, and names the largest uncovered ones, told apart:

* `compute`: a name that reads like dense maths (matmul, conv, RNN, attention, einsum) with
  no count: a FLOP formula is missing, and MFU reads low by up to its share;
* `no FLOP convention`: elementwise ops, copies, reductions, the optimizer: model FLOPs leave
  them out by definition (PaLM App. B counts matmuls), so they lower MFU by design.

Pure: the counted op names (run.json flops.per_op_per_step) and the top operators
(analysis.json) in, a typed result out. Limit: only the analysis' top operators are seen;
the rest is stated as not inspected.
"""

from __future__ import annotations

from typing import Iterable

import msgspec

from trainprof import namematch

COMPUTE = namematch.compile(r"mm|matmul|conv|linear|rnn|lstm|gru|attention|einsum|bmm|sdpa", ignorecase=True)
"""Op names that read like dense maths (linear time in the name's length: no nested repeats)."""
WARN_PCT = 5.0  # uncovered compute ops above this share of operator time get a warning


class Uncovered(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    share_pct: float
    kind: str
    """"compute" (no formula) or "no FLOP convention" (elementwise, copies, reductions)"""


class Coverage(msgspec.Struct, frozen=True, kw_only=True):
    covered_pct: float
    """share of operator time spent in ops whose FLOPs were counted"""
    uncovered: list[Uncovered]
    """the top operators with no count, largest first"""
    not_inspected_pct: float
    """operator time outside the analysis' top operators"""
    metric: str
    """what the shares are of: "gpu" time or "self_cpu" time"""
    warning: str | None
    """set when uncovered compute ops hold more than WARN_PCT of operator time"""


def _key(name: str) -> str:
    """'aten::mm' and FlopCounterMode's 'aten.mm' as one key."""
    return name.replace("::", ".").split(".", 1)[-1].lower()


def flop_coverage(counted_ops: Iterable[str], top_ops: list) -> Coverage | None:  # noqa: ANN001 - OpRow
    """`counted_ops`: op names with a non-zero count; `top_ops`: OpRow-like rows (name, share_pct,
    metric). None when there are no ops to compare."""
    rows = [r for r in top_ops if (r.share_pct or 0) > 0]
    if not rows:
        return None
    counted = {_key(n) for n in counted_ops}
    covered, uncovered = 0.0, []
    for r in rows:
        if _key(r.name) in counted:
            covered += r.share_pct
        else:
            kind = "compute" if COMPUTE.search(r.name[:200]) else "no FLOP convention"
            uncovered.append(Uncovered(name=r.name, share_pct=round(r.share_pct, 2), kind=kind))
    seen = sum(r.share_pct for r in rows)
    missing = [u for u in uncovered if u.kind == "compute"]
    lost = sum(u.share_pct for u in missing)
    warning = None
    if lost > WARN_PCT:
        warning = (f"FLOPs are not counted for {', '.join(f'{u.name} ({u.share_pct:.1f}%)' for u in missing[:3])}: "
                   f"{lost:.1f}% of operator time does maths with no FLOP formula, so MFU reads low by up to that "
                   "share; pass --flops-per-step with the model's count")
    return Coverage(covered_pct=round(covered, 2), uncovered=uncovered[:5],
                    not_inspected_pct=round(max(0.0, 100.0 - seen), 2), metric=rows[0].metric or "self_cpu",
                    warning=warning)
