"""Tiny kernels that are pure overhead: casts, copies and fills shorter than TINY_US.

A `.to(dtype)` of an input, a `torch.zeros` re-made each step, a `.contiguous()` of a small
tensor: each launches a kernel of a few µs that does nothing the model needs done in the
step, and each costs the host a launch (~5–10 µs of dispatch and cudaLaunchKernel) whatever
its size. A public record's README names three ~15 µs cast kernels per step from `.to()` of
the inputs (issue #39); that is this block's target.

Which rows: GPU work shorter than TINY_US that is a cast/copy or a fill, known by the op that
launched it (the outermost of COPY_OPS / FILL_OPS on its launching thread's op stack:
`aten::to`, not the `aten::copy_` inside it) or, where the launch is not linked, by the
kernel's name (PyTorch's `direct_copy_kernel`, `FillFunctor`); memsets are fills and
device-to-device memcpys copies. Host↔device transfers are not (pageable_memcpy's).

Grouped by call site (kind, op chain, the user's Python line where the trace has frames);
`per_step` = count ÷ profiled steps (the whole trace's count without steps). The rows and
their ops go to the what-if (`remove tiny_kernels`: the kernels and the host time of their
ops cost 0 — the cast done once, the buffer pre-allocated), whose gain is the finding's.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from trainprof import namematch
from trainprof.analysis.timeline.callsite import user_frames
from trainprof.analysis.timeline.context import Context
from trainprof.recordtypes.timeline import TinyGroup, TinyKernels
from trainprof.trace import Kind
from trainprof.trace.ids import distinct

TINY_US = 20.0  # below this a kernel gives the GPU about what its launch costs the host
COPY_OPS = frozenset({"aten::to", "aten::_to_copy", "aten::copy_", "aten::clone", "aten::contiguous",
                      "aten::type_as"})
FILL_OPS = frozenset({"aten::fill_", "aten::zero_", "aten::zeros", "aten::ones", "aten::full", "aten::zeros_like",
                      "aten::ones_like", "aten::full_like", "aten::new_zeros", "aten::new_ones", "aten::new_full"})
COPY_KERNEL = namematch.compile(r"direct_copy_kernel|copy_kernel|CopyKernel")
FILL_KERNEL = namematch.compile(r"FillFunctor|fill_kernel")
DTOD = namematch.compile(r"DtoD|Device -> Device")
MAX_GROUPS = 5
KINDS = (None, "cast/copy", "fill")
OP_DEPTH = 8  # op stack levels searched above the launch (aten::to > _to_copy > copy_ is 3)


def _names(ctx: Context, pred, rows: np.ndarray | None = None) -> np.ndarray:
    """A lookup table: name id → pred(name), evaluated only for the names `rows` carry (kernel
    names are thousands of long C++ signatures: idle.rows_named)."""
    t = ctx.trace
    ids = distinct(t.name_id[rows], len(t.names)) if rows is not None else range(len(t.names))
    out = np.zeros(len(t.names), dtype=bool)
    for i in ids:
        out[int(i)] = bool(pred(t.names[int(i)]))
    return out


def outer_ops(ctx: Context, rows: np.ndarray, names: frozenset) -> np.ndarray:
    """Per GPU row, the outermost op of `names` on the stack above its launch (-1: none);
    vectorised over the rows, one level of the stack at a time."""
    t = ctx.trace
    hit = _names(ctx, lambda n: n in names)
    op = ctx.links.op[rows].astype(np.int64)
    found = np.full(len(rows), -1, dtype=np.int64)
    for _ in range(OP_DEPTH):
        ok = op >= 0
        if not ok.any():
            break
        yes = ok & hit[t.name_id[np.maximum(op, 0)]]
        found[yes] = op[yes]
        op = np.where(ok, ctx.links.op_parent[np.maximum(op, 0)], -1)
    return found


def classify(ctx: Context, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: 0 none, 1 cast/copy, 2 fill; and the op that made it (-1: none known)."""
    t = ctx.trace
    fill, copy = outer_ops(ctx, rows, FILL_OPS), outer_ops(ctx, rows, COPY_OPS)
    nid, kind = t.name_id[rows], t.kind[rows]
    fill_k = _names(ctx, FILL_KERNEL.search, rows)[nid]
    copy_k = _names(ctx, COPY_KERNEL.search, rows)[nid]
    dtod = _names(ctx, DTOD.search, rows)[nid]
    out = np.zeros(len(rows), dtype=np.int8)
    is_kernel = kind == Kind.KERNEL
    out[is_kernel & ((copy >= 0) | copy_k)] = 1
    out[is_kernel & ((fill >= 0) | ((copy < 0) & fill_k))] = 2
    out[(kind == Kind.MEMCPY) & dtod] = 1
    out[kind == Kind.MEMSET] = 2
    op = np.where(out == 2, fill, np.where(out == 1, copy, -1))
    return out, op


def chains(ctx: Context, ops: np.ndarray, depth: int = 4) -> list[str | None]:
    """Each op with its enclosing ops, outermost first ('aten::to > aten::_to_copy > aten::copy_'),
    built from name ids level by level (one string per distinct chain, not per row)."""
    t = ctx.trace
    levels, op = [], ops.astype(np.int64)
    for _ in range(depth):
        levels.append(np.where(op >= 0, t.name_id[np.maximum(op, 0)], -1))
        op = np.where(op >= 0, ctx.links.op_parent[np.maximum(op, 0)], -1)
    keys = list(zip(*(lv.tolist() for lv in levels))) if len(ops) else []
    text = {k: " > ".join(t.names[i] for i in reversed(k) if i >= 0) or None for k in set(keys)}
    return [text[k] for k in keys]


def tiny_kernels(ctx: Context) -> tuple[TinyKernels, np.ndarray, np.ndarray]:
    """(the block, the tiny rows, their ops' rows) — the rows for the what-if."""
    t = ctx.trace
    n_steps = 1 if ctx.steps.pseudo else max(1, len(ctx.steps))
    cand = ctx.work[t.dur_us[ctx.work] < TINY_US]
    kind, op = classify(ctx, cand)
    rows_a, ops_a, kind = cand[kind > 0], op[kind > 0], kind[kind > 0]
    rows = rows_a.tolist()
    kinds = [KINDS[k] for k in kind.tolist()]
    launch = ctx.links.launch[rows_a] if len(rows_a) else rows_a
    frames = user_frames(ctx, np.where(launch >= 0, launch, rows_a)) if len(rows_a) else []
    # a call site: (kind, the op, the user's line); its op shown with the callers most of its
    # kernels had (one line of Python can cast inside several callers' ops)
    groups: dict[tuple, list] = defaultdict(lambda: [0, 0.0, Counter()])
    names = [t.name(o) if o >= 0 else None for o in ops_a.tolist()]
    for r, name, chain, kd, fr in zip(rows, names, chains(ctx, ops_a), kinds, frames):
        g = groups[(kd, name, fr)]
        g[0] += 1
        g[1] += float(t.dur_us[r])
        g[2][chain] += 1
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1][0], -kv[1][1]))[:MAX_GROUPS]
    block = TinyKernels(
        threshold_us=TINY_US, count=len(rows), total_us=float(t.dur_us[rows_a].sum()) if len(rows_a) else 0.0,
        per_step=len(rows) / n_steps,
        groups=[TinyGroup(kind=k[0], op=v[2].most_common(1)[0][0], python=k[2], count=v[0], per_step=v[0] / n_steps,
                          total_us=v[1])
                for k, v in ranked])
    return block, rows_a, np.unique(ops_a[ops_a >= 0])
