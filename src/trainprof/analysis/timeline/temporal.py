"""GPU temporal breakdown: compute / communication / memcpy / memset / idle.

Whole trace, HTA's definitions (hta/analyzers/breakdown_analysis.py, get_temporal_breakdown)
so the two tools can be checked against each other:

* span    = first GPU activity start → last GPU activity end (all streams);
* idle    = span − |∪ all GPU activity|;
* compute = |∪ compute kernels|, compute = neither communication nor memcpy/memset.

HTA stops there (non-compute = span − compute − idle). We split non-compute with a fixed
precedence so the parts add up to the span: communication = |∪(compute ∪ comm)| − compute
(communication not hidden under compute), then memcpy, then memset, then `sync` (Kineto's
cuda_sync stream-wait markers, which HTA counts as non-compute) likewise.

Which rows: HTA's selection (Context.timeline): with two or more profiler steps, only GPU
activity launched before the last step began. Per-step rows (below) use every step.

Per step, the GPU timeline is partitioned at the end of each step's GPU work: step i owns
(end_{i-1}, end_i] (the first step starts at its first activity), so the gap before a
step's first kernel (often the data loader) is that step's idle time, and the steps add up.
The windows are step_windows.py's, the ones the critical path and the what-if use.
"""

from __future__ import annotations

import numpy as np

from trainprof.analysis.timeline import intervals as iv
from trainprof.analysis.timeline.context import NON_COMPUTE, Context
from trainprof.analysis.timeline.step_windows import step_windows
from trainprof.recordtypes.timeline import StepRow, Temporal
from trainprof.vocab.parts import BUSY, PARTS as ALL_PARTS

PARTS = BUSY  # vocab/parts.py: each row counts once, in the first of these it belongs to


class _Spans:
    """One group's rows as (starts, ends) in start order (rows ascend, and so do their starts),
    with its longest duration: the rows a window [lo, hi) can touch lie between two binary
    searches. Per step this replaces clipping every row of the trace (O(steps × rows): 1.2 s
    of a 4.5M-event trace's analysis) by clipping the few near the step; iv.clip then drops
    exactly what it dropped before, so the sums are the same, bit for bit."""

    def __init__(self, ctx: Context, rows: np.ndarray) -> None:
        self.s, self.e = ctx.spans(rows)
        self.longest = float((self.e - self.s).max()) if len(rows) else 0.0

    def near(self, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
        # 1 µs of margin: lo − longest is rounded; the extra rows are dropped by iv.clip
        a = int(np.searchsorted(self.s, lo - self.longest - 1.0, side="left"))
        b = int(np.searchsorted(self.s, hi, side="left"))
        return self.s[a:b], self.e[a:b]


def _step_groups(ctx: Context) -> list[_Spans]:
    return [_Spans(ctx, rows) for rows in (ctx.compute, *(ctx.class_rows(n) for n in NON_COMPUTE),
                                            np.zeros(0, dtype=np.int64))]


def _breakdown(ctx: Context, lo: float, hi: float, whole: np.ndarray | None = None,
               groups: list[_Spans] | None = None) -> dict[str, float]:
    if whole is not None:
        spans = [ctx.spans(rows) for rows in ctx.timeline_parts(whole)]
    else:
        spans = [g.near(lo, hi) for g in (groups if groups is not None else _step_groups(ctx))]
    acc_s, acc_e = np.zeros(0), np.zeros(0)
    prev = 0.0
    out: dict[str, float] = {"span_us": max(0.0, hi - lo)}
    for name, (starts, ends) in zip(PARTS, spans):
        s, e = iv.clip(starts, ends, lo, hi)
        acc_s, acc_e = np.concatenate([acc_s, s]), np.concatenate([acc_e, e])
        covered = iv.length(acc_s, acc_e)
        out[f"{name}_us"] = covered - prev
        prev = covered
    out["idle_us"] = max(0.0, out["span_us"] - prev)
    span = out["span_us"]
    for name in ALL_PARTS:
        out[f"{name}_pct"] = 100.0 * out[f"{name}_us"] / span if span > 0 else 0.0
    return out


def temporal_breakdown(ctx: Context, hta: bool = False) -> Temporal:
    """Whole-trace breakdown over the window of HTA's selection of GPU rows (Context.window)
    and every GPU row inside it (Context.timeline), with `hta_idle_us`: the idle time HTA
    reports, which also counts the work its selection drops. `hta=True`: HTA's rows alone,
    HTA's figures exactly (the cross-check against HTA; not the product's answer)."""
    if not len(ctx.timeline_hta):
        return Temporal(**_breakdown(ctx, 0.0, 0.0))
    lo, hi = ctx.window
    out = _breakdown(ctx, lo, hi, whole=ctx.timeline_hta if hta else ctx.timeline)
    if hta or len(ctx.timeline) == len(ctx.timeline_hta):
        hta_idle = out["idle_us"]
    else:
        s, e = iv.clip(*ctx.spans(ctx.timeline_hta), lo, hi)
        hta_idle = max(0.0, out["span_us"] - iv.length(s, e))
    out["hta_idle_us"] = hta_idle
    out["hta_idle_pct"] = 100.0 * hta_idle / out["span_us"] if out["span_us"] > 0 else 0.0
    return Temporal(**out)


def per_step(ctx: Context) -> list[StepRow]:
    """One row per step (per the pseudo-step: the whole trace); a step without GPU work has
    no GPU columns."""
    out = []
    win = step_windows(ctx)
    ws, we = np.where(win.gpu, win.start_us, np.nan), win.end_us
    st = ctx.steps
    groups = _step_groups(ctx)
    for i in range(len(st)):
        step, cpu = int(st.number[i]), float(st.cpu_dur_us[i])
        if np.isnan(ws[i]):
            out.append(StepRow(step=step, cpu_us=cpu, gpu_events=0))
        else:
            out.append(StepRow(step=step, cpu_us=cpu, **_breakdown(ctx, float(ws[i]), float(we[i]), groups=groups),
                               gpu_events=int(st.n_gpu_events[i])))
    return out
