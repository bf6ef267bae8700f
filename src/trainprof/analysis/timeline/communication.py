"""Collectives: time per collective, and how much of it hides under compute.

One definition of exposed communication (issue #39 item 7), the temporal breakdown's: over
its window and rows (Context.window, Context.timeline: HTA's window, every GPU row inside it),

overlap_pct = |∪comm ∩ ∪compute| / |∪comm| × 100 (HTA's get_comm_comp_overlap);
exposed_us  = |∪comm| − overlap: communication the step had to wait for,

so `exposed_us` is the breakdown's `communication_us` (asserted) and the exposed_communication
finding's share is the breakdown's `communication_pct`. Before, this block measured every
step's work (the last, cut-short step too) and the breakdown HTA's window: on the A100 DDP
trace 39.6 ms "exposed" here beside "communication 20.7 ms" in the breakdown, two answers to
one question. `total_us` (the kernels' summed time) and `steps_union_us` (|∪comm| over every
step's work, what the cross-rank comparison divides by the steps) stay whole-trace figures.
NCCL kernels also spin while waiting for slower peers, so on a rank that waits,
"communication" includes that wait (see multirank.py for stragglers).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from trainprof.analysis.timeline import intervals as iv
from trainprof.analysis.timeline.context import Context
from trainprof.recordtypes.timeline import CollectiveCount, Communication
from trainprof.vocab.collectives import canonical_op


def collective_of(kernel_name: str) -> str:
    """The kernel's collective in nccl-tests' spelling, the job analysis' (`all_reduce`; before
    issue #44 this block wrote `allreduce` beside `multi_rank`'s `all_reduce`)."""
    return canonical_op(kernel_name)  # cached per distinct name (2,020 kernels on the DDP trace)


def communication(ctx: Context) -> Communication:
    t = ctx.trace
    comm = ctx.class_rows("communication")
    if not len(comm):
        return Communication(kernels=0, total_us=0.0, union_us=0.0, overlap_us=0.0, overlap_pct=None,
                             exposed_us=0.0, collectives=[])
    lo, hi = ctx.window
    parts = ctx.timeline_parts(ctx.timeline)
    cs, ce = iv.clip(*ctx.spans(parts[1]), lo, hi)
    union = iv.length(cs, ce)
    overlap = iv.intersection_length((cs, ce), iv.clip(*ctx.spans(parts[0]), lo, hi))
    per: dict[str, list] = defaultdict(lambda: [0, 0.0])
    for name, d in zip(t.names_of(comm), t.dur_us[comm]):
        p = per[collective_of(name)]
        p[0] += 1
        p[1] += float(d)
    # the steps the window covers: those whose GPU work ends inside it
    ends = ctx.steps.gpu_end_us
    n_steps = max(1, int(np.sum(ends <= hi + 1e-6)) if len(ends) and not ctx.steps.pseudo else 1)
    return Communication(
        kernels=int(len(comm)),
        total_us=float(t.dur_us[comm].sum()),
        union_us=union,
        overlap_us=overlap,
        overlap_pct=100.0 * overlap / union if union > 0 else None,
        exposed_us=union - overlap,
        exposed_per_step_us=(union - overlap) / n_steps,
        steps_union_us=iv.length(*ctx.spans(comm)),
        collectives=[CollectiveCount(collective=k, count=v[0], total_us=v[1])
                     for k, v in sorted(per.items(), key=lambda kv: -kv[1][1])],
    )
