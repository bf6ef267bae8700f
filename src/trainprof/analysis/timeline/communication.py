"""Collectives: time per collective, and how much of it hides under compute.

overlap_pct = |∪comm ∩ ∪compute| / |∪comm| × 100 (HTA's get_comm_comp_overlap);
exposed_us  = |∪comm| − overlap: communication the step had to wait for. NCCL kernels also
spin while waiting for slower peers, so on a rank that waits, "communication" includes that
wait (see multirank.py for stragglers).
"""

from __future__ import annotations

from collections import defaultdict

from trainprof import namematch
from trainprof.analysis.timeline import intervals as iv
from trainprof.analysis.timeline.context import Context
from trainprof.recordtypes.timeline import CollectiveCount, Communication

COLLECTIVE = namematch.compile(
    r"(AllReduce|AllGather|ReduceScatter|Broadcast|AllToAll|alltoall|SendRecv|Send|Recv|Reduce|Gather|Scatter)", ignorecase=True)


def collective_of(kernel_name: str) -> str:
    m = COLLECTIVE.search(kernel_name)
    return m.group(1).lower() if m else "other"


def communication(ctx: Context) -> Communication:
    t = ctx.trace
    comm = ctx.class_rows("communication")
    if not len(comm):
        return Communication(kernels=0, total_us=0.0, union_us=0.0, overlap_us=0.0, overlap_pct=None,
                             exposed_us=0.0, collectives=[])
    cs, ce = ctx.spans(comm)
    union = iv.length(cs, ce)
    overlap = iv.intersection_length((cs, ce), ctx.spans(ctx.compute))
    per: dict[str, list] = defaultdict(lambda: [0, 0.0])
    for name, d in zip(t.names_of(comm), t.dur_us[comm]):
        p = per[collective_of(name)]
        p[0] += 1
        p[1] += float(d)
    n_steps = max(1, len(ctx.steps))
    return Communication(
        kernels=int(len(comm)),
        total_us=float(t.dur_us[comm].sum()),
        union_us=union,
        overlap_us=overlap,
        overlap_pct=100.0 * overlap / union if union > 0 else None,
        exposed_us=union - overlap,
        exposed_per_step_us=(union - overlap) / n_steps,
        collectives=[CollectiveCount(collective=k, count=v[0], total_us=v[1])
                     for k, v in sorted(per.items(), key=lambda kv: -kv[1][1])],
    )

