"""Redundant copies: a copy whose output feeds the next op together with its own source.

`y = x.clone(); z = torch.mm(x, y)` (or `.contiguous()`, `copy_` into a fresh buffer) copies
a tensor the op could have read twice: a public record's README names such a defensive copy
inside an optimizer kernel sequence, "a matmul fed the same tensor twice after a copy"
(issue #39). On one host thread, among the ops of one parent (siblings, in time order):

    C  aten::clone / aten::contiguous / aten::copy_   source shape S (copy_: its 2nd input)
    O  the next sibling op, with exactly two inputs of shape S (and of C's dtype, where
       the trace records types); not a copy (copy_(dst, src) always takes two of one shape)
       nor an in-place op (`aten::mul_`: the copy may guard the source from the write)

A Kineto trace records shapes, not tensor identities, so the pair is found by shape and
order: two inputs of one shape right after a copy of that shape. That is the claim made
(the evidence says "by shape"); an op fed two different tensors of one shape right after a
copy would match too, which is why the finding's confidence is medium (three of one shape — SDPA's
q, k, v after `q.contiguous()` on the H100 Qwen trace — is taken for what it is: different tensors). Not found (limits,
docs/rules.md): copies of a tensor that is never modified, and copies next to a layout
change, need the tensors' identities and the ops' outputs, which Kineto's JSON lacks.

Time: the copies' GPU work (kernels launched under C) on a GPU trace, C's host time on a
CPU-only one. The copies' rows go to the what-if (`remove redundant_copies`: the copy
kernels and the copy ops' host time cost 0), whose gain is the finding's.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from trainprof.analysis.timeline.callsite import user_frames
from trainprof.analysis.timeline.context import Context
from trainprof.recordtypes.timeline import CopyPair, RedundantCopies
from trainprof.trace import Kind

COPIES = frozenset({"aten::clone", "aten::contiguous", "aten::copy_"})
MAX_PAIRS = 5
OP_DEPTH = 8


def _shape(d) -> tuple | None:
    return tuple(d) if isinstance(d, (list, tuple)) and d and all(isinstance(x, int) for x in d) else None


def _source(ctx: Context, row: int) -> tuple[tuple | None, object]:
    """The copied tensor's shape and dtype (copy_(self, src): src is the 2nd input)."""
    t = ctx.trace
    dims = list(t.arg(t.dims_id, row) or [])
    types = list(t.arg(t.types_id, row) or [])
    i = 1 if t.name(row) == "aten::copy_" else 0
    return (_shape(dims[i]) if len(dims) > i else None), (types[i] if len(types) > i else None)


def _fed_twice(ctx: Context, row: int, shape: tuple, dtype) -> bool:
    t = ctx.trace
    dims = list(t.arg(t.dims_id, row) or [])
    types = list(t.arg(t.types_id, row) or [])
    same = [i for i, d in enumerate(dims) if _shape(d) == shape
            and (dtype is None or i >= len(types) or not types[i] or types[i] == dtype)]
    # exactly two: q, k, v of one shape (attention) after q.contiguous() are three different tensors
    return len(same) == 2


def pairs(ctx: Context) -> list[tuple[int, int]]:
    """(copy op row, consumer op row) per redundant copy, in time order."""
    t = ctx.trace
    ops = t.rows(Kind.CPU_OP)
    if not len(ops):
        return []
    parent = ctx.links.op_parent[ops]
    order = np.lexsort((t.ts_us[ops], parent, t.tid[ops], t.pid[ops]))
    ops, parent = ops[order], parent[order]
    is_copy = np.array([t.names[i] in COPIES for i in range(len(t.names))], dtype=bool)[t.name_id[ops]]
    out = []
    for i in np.flatnonzero(is_copy[:-1]).tolist():
        c, o = int(ops[i]), int(ops[i + 1])
        if (t.pid[c], t.tid[c], parent[i]) != (t.pid[o], t.tid[o], parent[i + 1]) or t.ts_us[o] < t.end_us[c]:
            continue
        shape, dtype = _source(ctx, c)
        # not a copy (copy_(dst, src) always takes two of one shape) nor an in-place op (`x.mul_(y)`
        # after `y = x.clone()`: the clone may guard the source from the write)
        consumer = t.name(o)
        if consumer in COPIES or consumer.endswith("_"):
            continue
        if shape is not None and _fed_twice(ctx, o, shape, dtype):
            out.append((c, o))
    return sorted(out, key=lambda p: t.ts_us[p[0]])


def _work_under(ctx: Context, ops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The GPU rows launched under any of `ops` (on their thread's op stack), and which."""
    mark = np.zeros(len(ctx.trace), dtype=bool)
    mark[ops] = True
    work = ctx.work
    op = ctx.links.op[work].astype(np.int64)
    owner = np.full(len(work), -1, dtype=np.int64)
    for _ in range(OP_DEPTH):
        ok = op >= 0
        if not ok.any():
            break
        yes = ok & mark[np.maximum(op, 0)] & (owner < 0)
        owner[yes] = op[yes]
        op = np.where(ok, ctx.links.op_parent[np.maximum(op, 0)], -1)
    return work[owner >= 0], owner[owner >= 0]


def redundant_copies(ctx: Context) -> tuple[RedundantCopies, np.ndarray, np.ndarray]:
    """(the block, the copies' GPU rows, the copy ops' rows) — the rows for the what-if."""
    t = ctx.trace
    found = pairs(ctx)
    n_steps = 1 if ctx.steps.pseudo else max(1, len(ctx.steps))
    copies = np.array([c for c, _ in found], dtype=np.int64)
    gpu, owner = _work_under(ctx, copies) if len(copies) and ctx.has_gpu else (np.zeros(0, np.int64),) * 2
    own_us: dict[int, float] = defaultdict(float)
    for r, c in zip(gpu.tolist(), owner.tolist()):
        own_us[c] += float(t.dur_us[r])
    frames = user_frames(ctx, copies) if len(copies) else []
    groups: dict[tuple, list] = defaultdict(lambda: [0, 0.0])
    for (c, o), fr in zip(found, frames):
        shape, _ = _source(ctx, c)
        us = own_us[c] if ctx.has_gpu else float(t.dur_us[c])
        g = groups[(t.name(c), t.name(o), shape, fr)]
        g[0] += 1
        g[1] += us
    ranked = sorted(groups.items(), key=lambda kv: -kv[1][1])[:MAX_PAIRS]
    time_us = float(t.dur_us[gpu].sum()) if ctx.has_gpu else float(t.dur_us[copies].sum()) if len(copies) else 0.0
    block = RedundantCopies(
        count=len(found), time_us=time_us, time_kind="gpu" if ctx.has_gpu else "host", per_step=len(found) / n_steps,
        pairs=[CopyPair(copy=k[0], consumer=k[1], dims=list(k[2]), python=k[3], count=v[0], time_us=v[1])
               for k, v in ranked])
    return block, gpu, copies
