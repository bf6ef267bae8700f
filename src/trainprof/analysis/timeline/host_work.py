"""Facts the diagnosis rules need beyond the breakdowns: memcpy kinds, the optimizer step,
the attention backend, and where the host's time went per step.
"""

from __future__ import annotations


import numpy as np

from trainprof import namematch
from trainprof.analysis.timeline import intervals as iv
from trainprof.analysis.timeline.attention_pattern import eager_attention
from trainprof.analysis.timeline.context import NON_COMPUTE, Context
from trainprof.analysis.timeline.idle import rows_named
from trainprof.recordtypes.timeline import Attention, CopyKind, Memcpy, Optimizer
from trainprof.trace import Kind
from trainprof.trace.ids import distinct

# "Memcpy HtoD (Pageable -> Device)": CUDA names the direction and the host memory kind.
MEMCPY = namematch.compile(r"Memcpy (?P<dir>HtoD|DtoH|DtoD|HtoH|PtoP)(?: \((?P<src>\w+) -> (?P<dst>\w+)\))?")
OPTIMIZER_STEP = namematch.compile(r"^Optimizer\.step#(?P<cls>[\w.]+)\.step$|^trainprof\.optimizer$")
MATH_ATTENTION = namematch.compile(r"^aten::_scaled_dot_product_attention_math")
FUSED_ATTENTION = namematch.compile(r"^aten::(_scaled_dot_product_(flash|efficient|cudnn)_attention|_flash_attention_forward"
                             r"|_efficient_attention_forward)")


def memcpy_stats(ctx: Context) -> Memcpy:
    """Copy time by direction and host memory kind (pageable copies cannot overlap compute)."""
    t = ctx.trace
    rows = t.rows(Kind.MEMCPY)
    by_kind: dict[str, list] = {}
    pageable_us, pageable_count = 0.0, 0
    for nid in distinct(t.name_id[rows], len(t.names)):
        sel = rows[t.name_id[rows] == nid]
        name = t.names[nid]
        m = MEMCPY.search(name)
        key = name if m is None else (m.group("dir") + (f" {m.group('src')}->{m.group('dst')}" if m.group("src") else ""))
        d = by_kind.setdefault(key, [0, 0.0])
        d[0] += int(len(sel))
        d[1] += float(t.dur_us[sel].sum())
        if m and "Pageable" in (m.group("src") or "", m.group("dst") or ""):
            pageable_us += float(t.dur_us[sel].sum())
            pageable_count += int(len(sel))
    return Memcpy(count=int(len(rows)), total_us=float(t.dur_us[rows].sum()), pageable_us=pageable_us,
                  pageable_count=pageable_count,
                  by_kind={k: CopyKind(count=n, total_us=us) for k, (n, us) in by_kind.items()})


def optimizer_stats(ctx: Context) -> Optimizer:
    """Optimizer.step ranges (torch.optim records them) and the GPU work they launched."""
    t = ctx.trace
    ids = [i for i, n in enumerate(t.names) if OPTIMIZER_STEP.match(n)]
    rows = np.flatnonzero(np.isin(t.name_id, ids) & t.mask(Kind.USER_ANNOTATION, Kind.CPU_OP))
    if not len(rows):
        return Optimizer(steps=0)
    classes = sorted({m.group("cls") for m in (OPTIMIZER_STEP.match(t.name(int(r))) for r in rows)
                      if m and m.group("cls")})
    torch_rows = rows[[t.name(int(r)).startswith("Optimizer.step#") for r in rows]]
    n_steps = len(torch_rows) if len(torch_rows) else len(rows)  # trainprof.optimizer wraps the same step
    cpu_us = iv.length(t.ts_us[rows], t.end_us[rows])
    # GPU work launched inside the optimizer ranges (any thread: launch time inside)
    work = ctx.work
    launch = ctx.links.launch[work]
    lt = np.where(launch >= 0, t.ts_us[np.maximum(launch, 0)], np.nan)
    s, e = iv.union(t.ts_us[rows], t.end_us[rows])
    pos = np.searchsorted(s, lt, side="right") - 1
    inside = (pos >= 0) & (lt <= e[np.maximum(pos, 0)])
    kernels = work[inside]
    split = phase_split(ctx, kernels, pos[inside])
    return Optimizer(steps=int(n_steps), classes=classes, cpu_us=cpu_us,
                     kernels=int(len(kernels)), gpu_us=float(t.dur_us[kernels].sum()),
                     kernels_per_step=float(len(kernels)) / max(1, n_steps), **split)


def phase_split(ctx: Context, kernels: np.ndarray, phase: np.ndarray) -> dict[str, float]:
    """Where the GPU's time went inside the optimizer phase (issue #39 item 4): per
    Optimizer.step range, the phase on the GPU runs from its first work's start to its last
    work's end (`phase_us`, summed over the ranges); in it `compute_us` = |∪ compute kernels|,
    `communication_us` = communication not under compute (the one definition of exposed
    communication, analysis/timeline/communication.py), `copy_us` = the copies and fills
    left, `idle_us` = the rest. The parts add up to the phase (asserted): the largest decides
    what the optimizer finding advises (diagnose/rules.py optimizer_bound)."""
    t = ctx.trace
    out = {"phase_us": 0.0, "compute_us": 0.0, "communication_us": 0.0, "copy_us": 0.0, "idle_us": 0.0}
    if not len(kernels):
        return out
    cls = np.array([ctx.class_name(int(r)) for r in kernels])
    comm = cls == "communication"
    comp = ~np.isin(cls, NON_COMPUTE)
    for p in np.unique(phase):
        sel = phase == p
        s, e = t.ts_us[kernels[sel]], t.end_us[kernels[sel]]
        out["phase_us"] += float(e.max() - s.min())
        c = iv.length(s[comp[sel]], e[comp[sel]])
        cc = iv.length(np.concatenate([s[comp[sel]], s[comm[sel]]]), np.concatenate([e[comp[sel]], e[comm[sel]]]))
        busy = iv.length(s, e)
        out["compute_us"] += c
        out["communication_us"] += cc - c
        out["copy_us"] += busy - cc
        out["idle_us"] += float(e.max() - s.min()) - busy
    parts = out["compute_us"] + out["communication_us"] + out["copy_us"] + out["idle_us"]
    assert abs(parts - out["phase_us"]) <= 1e-6 * max(1.0, out["phase_us"]), (parts, out["phase_us"])
    return out


def attention_stats(ctx: Context) -> Attention:
    """Which SDPA backend ran: the math fallback materialises the T×T scores."""
    t = ctx.trace
    ops = t.rows(Kind.CPU_OP)
    # each distinct op name tested once, not every row's (rows_named; the patterns start with
    # ^, so its search is a match): attention_stats 16.3 → 2.9 ms on the DDP trace (median of 21)
    math_rows = rows_named(ctx, MATH_ATTENTION, ops)
    math = int(len(math_rows))
    fused = int(len(rows_named(ctx, FUSED_ATTENTION, ops)))
    gpu_us = 0.0
    if len(math_rows) and ctx.has_gpu:
        # kernels billed to ops nested under the math op: its bmm/softmax children
        inner = ctx.links.op[ctx.work]
        under = np.zeros(len(t), dtype=bool)
        under[math_rows] = True
        anc = inner.copy()
        hit = np.zeros(len(anc), dtype=bool)
        for _ in range(16):
            ok = anc >= 0
            hit[ok] |= under[anc[ok]]
            anc = np.where(ok, ctx.links.op_parent[np.maximum(anc, 0)], -1)
        gpu_us = float(t.dur_us[ctx.work[hit]].sum())
    eager = eager_attention(ctx)
    return Attention(math_calls=math, fused_calls=fused, math_gpu_us=gpu_us,
                     eager_blocks=eager["blocks"], eager_time_us=eager["time_us"],
                     eager_time_kind=eager["time_kind"], eager_by_shape=eager["by_shape"],
                     eager_example=eager["example"])
