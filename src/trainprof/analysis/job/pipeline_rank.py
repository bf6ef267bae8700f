"""One pipeline stage's schedule, per profiler step: its busy time and its waits for neighbours.

trainprof's own pipeline (workload/pipeline.py) runs each micro-batch's forward and backward
of a stage inside a `trainprof.pp_forward i` / `trainprof.pp_backward i` range, under every
schedule; without them, torch.distributed.pipelining's GPipe marks its own `Forward i` /
`Backward i` (pipelining/schedules.py; torch 2.13's 1F1B marks none), which also hold the
blocking wait for the input: the activations from the previous stage (forward) or the
gradients from the next (backward). trainprof's ranges are read when a trace has them (a
GPipe trace has both kinds: counting both would double its micro-batches). gloo's receive is `gloo:recv` on the same thread,
from the post to the data's arrival. The loss (last stage) and the sends run between the
ranges, on the same thread. So, per step, over the stage's span [first range start, last
range end] and the ops of the ranges' thread in it (the `gloo:` annotations left out: a
send's runs on after its call returns):

    busy      = |∪ ops| − |∪ ops ∩ ∪ recv|   (the stage computing)
    recv_wait = |∪ ops ∩ ∪ recv|             (the stage waiting for a neighbour)

The gaps between ops (the schedule's Python) count as neither: they are bubble, not compute.

The job analysis (analysis/job/bubble.py) puts the stages on one clock and compares busy
time with the window every stage shares.

Limits: CPU (gloo) traces of torch.distributed.pipelining's schedules. On a GPU the ranges
are the host's launches, which run ahead of the device: a GPU stage's bubble is its stream's
idle time, which this does not measure yet (docs/distributed.md).
"""

from __future__ import annotations

import numpy as np

from trainprof import namematch
from trainprof.analysis.timeline import intervals as iv
from trainprof.analysis.timeline.context import Context
from trainprof.recordtypes.collectives import RankPipeline, StageStep
from trainprof.trace import Kind

_RANGE = namematch.compile(r"^(Forward|Backward)( input| weight)? \d+$")
_FORWARD = namematch.compile(r"^Forward \d+$")
_OURS = namematch.compile(r"^trainprof\.pp_(forward|backward) \d+$")  # workload/pipeline.py RANGE
_OURS_FORWARD = namematch.compile(r"^trainprof\.pp_forward \d+$")


def stage_ops(ctx: Context) -> RankPipeline | None:
    """The stage's steps, or None where the trace has no pipelining ranges (or GPU work)."""
    t, steps = ctx.trace, ctx.steps
    if steps.pseudo or not len(steps) or np.any(t.kind == Kind.KERNEL):
        return None
    ours = [i for i, n in enumerate(t.names) if _OURS.search(n)]
    ids = ours or [i for i, n in enumerate(t.names) if _RANGE.search(n)]
    if not ids:
        return None
    fwd_ids = [i for i in ids if (_OURS_FORWARD if ours else _FORWARD).search(t.names[i])]
    rows = np.flatnonzero(np.isin(t.name_id, ids) & np.isin(t.kind, (Kind.CPU_OP, Kind.USER_ANNOTATION)))
    recv_ids = [i for i, n in enumerate(t.names) if n == "gloo:recv"]
    recv = np.flatnonzero(np.isin(t.name_id, recv_ids)) if recv_ids else np.zeros(0, dtype=np.int64)
    gloo = [i for i, n in enumerate(t.names) if n.startswith("gloo:")]
    main = int(np.bincount(np.unique(t.tid[rows], return_inverse=True)[1]).argmax())
    main_tid = np.unique(t.tid[rows])[main]
    ops = np.flatnonzero((t.tid == main_tid) & np.isin(t.kind, (Kind.CPU_OP, Kind.USER_ANNOTATION))
                         & ~np.isin(t.name_id, gloo))
    out = []
    for k in range(len(steps)):
        lo, hi = float(steps.cpu_start_us[k]), float(steps.cpu_end_us[k])
        mine = rows[(t.ts_us[rows] >= lo) & (t.ts_us[rows] < hi)]
        if not len(mine):
            continue
        a, b = float(t.ts_us[mine].min()), float(t.end_us[mine].max())
        inside = ops[(t.ts_us[ops] < b) & (t.end_us[ops] > a)]
        work = iv.union(*iv.clip(t.ts_us[inside], t.end_us[inside], a, b))
        waits = iv.union(*iv.clip(t.ts_us[recv], t.end_us[recv], a, b)) if len(recv) else iv.EMPTY
        wait = iv.intersection_length(work, waits)
        out.append(StageStep(
            step=int(steps.number[k]),
            microbatches=int(np.isin(t.name_id[mine], fwd_ids).sum()),
            start_us=round(a, 3), end_us=round(b, 3),
            busy_us=round(float((work[1] - work[0]).sum()) - wait, 3), recv_wait_us=round(wait, 3)))
    return RankPipeline(steps=out) if out else None
