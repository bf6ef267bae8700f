"""Eager attention on any trace: matmul → softmax → matmul on one thread, checked by shapes.

An attention written by hand (`scores = q @ k.transpose(-2, -1) * scale; p = scores.softmax(-1);
out = p @ v`, Hugging Face's "eager" implementation, older vision transformers) records, in
order on the host thread:

    mm1     aten::matmul / bmm / baddbmm / einsum   A [..., T, D] × B [..., D, S] → [..., T, S]
    softmax aten::softmax / _softmax / _safe_softmax  X [..., T, S]  (X's last dims = mm1's output)
    mm2     aten::matmul / bmm / einsum              P [..., T, S] × V [..., S, Dv]

with scale/mask/dropout ops in between. The shape chain separates it from a classifier's
softmax or a gating softmax (the recsys trace's `softmax([2, 1])` before a matmul is not
one). When shapes were not recorded the name order alone is reported, flagged `by_shape:
false`. Time of a block = its kernels (launched between mm1's start and mm2's end on that
thread) on a GPU trace, the block's host time on a CPU-only trace: the work one call of
F.scaled_dot_product_attention replaces.
"""

from __future__ import annotations

import numpy as np

from trainprof.analysis.timeline.context import Context
from trainprof.trace import Kind
from trainprof.vocab import matmul as mm

MATMULS = frozenset({mm.MATMUL, mm.BMM, mm.BADDBMM, "aten::einsum"})
SOFTMAXES = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax"})


def _shapes(dims) -> list[tuple[int, ...]]:
    return [tuple(d) for d in (dims or []) if isinstance(d, (list, tuple)) and len(d) >= 2
            and all(isinstance(x, int) for x in d)]


def _mm_in(name: str, dims) -> tuple[tuple, tuple] | None:
    s = _shapes(dims)
    if name == mm.BADDBMM:
        s = s[1:]  # (bias, batch1, batch2)
    return (s[0], s[1]) if len(s) >= 2 else None


def _is_attention(mm1, sm, mm2) -> bool | None:
    """True/False from the shapes; None when any shape is missing."""
    if mm1 is None or sm is None or mm2 is None:
        return None
    (a, b), x, (p, v) = mm1, sm, mm2
    t, d, s = a[-2], a[-1], b[-1]
    return (b[-2] == d and x[-2:] == (t, s) and p[-2:] == (t, s) and v[-2] == s
            and s > 1 and t >= 1)


def eager_attention(ctx: Context) -> dict:
    """Hand-written attention blocks: count, time, and one example with its shapes."""
    t = ctx.trace
    ops = t.rows(Kind.CPU_OP)
    want = np.array([n in MATMULS or n in SOFTMAXES for n in t.names], dtype=bool)
    rows = ops[want[t.name_id[ops]]]
    if len(rows):
        # outermost of each family only: aten::matmul, not the aten::bmm inside it
        par = ctx.links.op_parent[rows]
        inner = (par >= 0) & want[t.name_id[np.maximum(par, 0)]]
        rows = rows[~inner]
    rows = rows[np.lexsort((t.ts_us[rows], t.tid[rows], t.pid[rows]))]
    blocks: list[tuple[int, int, bool]] = []  # (mm1 row, mm2 row, by_shape)
    for i in range(len(rows) - 2):
        r1, r2, r3 = (int(x) for x in rows[i: i + 3])
        if (t.pid[r1], t.tid[r1]) != (t.pid[r3], t.tid[r3]):
            continue
        n1, n2, n3 = t.name(r1), t.name(r2), t.name(r3)
        if n1 not in MATMULS or n2 not in SOFTMAXES or n3 not in MATMULS or n3 == mm.BADDBMM:
            continue
        sm = _shapes(t.arg(t.dims_id, r2))
        ok = _is_attention(_mm_in(n1, t.arg(t.dims_id, r1)), sm[0] if sm else None,
                           _mm_in(n3, t.arg(t.dims_id, r3)))
        if ok is False:
            continue
        blocks.append((r1, r3, ok is True))
    out: dict = {"blocks": len(blocks), "by_shape": all(b[2] for b in blocks) if blocks else None,
                 "time_us": 0.0, "time_kind": "gpu" if ctx.has_gpu else "host", "example": None}
    if not blocks:
        return out
    starts = np.array([t.ts_us[b[0]] for b in blocks])
    ends = np.array([t.end_us[b[1]] for b in blocks])
    if ctx.has_gpu:
        work = ctx.work
        launch = ctx.links.launch[work]
        ok = launch >= 0
        work, launch = work[ok], launch[ok]
        key = t.pid[launch].astype(np.int64) * (1 << 32) + t.tid[launch]
        total = 0.0
        for (r1, _, _), s, e in zip(blocks, starts, ends):
            k = int(t.pid[r1]) * (1 << 32) + int(t.tid[r1])
            sel = (key == k) & (t.ts_us[launch] >= s) & (t.ts_us[launch] <= e)
            total += float(t.dur_us[work[sel]].sum())
        out["time_us"] = total
    else:
        out["time_us"] = float((ends - starts).sum())
    r1, r3, by_shape = blocks[0]
    out["example"] = {"first": t.name(r1), "first_dims": _plain(t.arg(t.dims_id, r1)),
                      "second": t.name(r3), "second_dims": _plain(t.arg(t.dims_id, r3))}
    return out


def _plain(v):
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v
