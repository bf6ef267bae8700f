"""Before/after comparison of two analysed traces (`trainprof diff BASE NEW`).

Per-step figures must divide each total by the number of steps its window covers:

* GPU time parts (compute, communication, memcpy, memset, sync, idle): the mean of the
  per-step records (analysis/timeline/temporal.py `per_step`, which partitions the GPU timeline at
  each step's end, so every step is counted whole). The whole-trace breakdown is HTA's
  window — activity launched before the last step began — and dividing it by *all* steps
  read ~1/N low (17% with six steps);
* operators, kernels and idle causes: totals over every step's GPU work, divided by the
  number of steps that launched GPU work (`gpu_steps`).

A trace without steps counts as one. Names present on one side only are "added" or
"removed"; rows sort by absolute change (µs per step, never by percentage). Idle causes (data
loading, host sync, launch overhead, other) and findings (appeared / disappeared / changed)
are compared too: each side's findings as its own analysis holds them, figures included
(issue #37: a diff that diagnosed a trace again showed a third figure beside the analysis's
two), and `story` says the biggest changes in words ("data-loading idle 285 ms → 0"), after
the runs' step split when both sides are run folders (jobs/diff.py; analysis/run/compare.py
gives the runs' part and the verdict, `trace_verdict` the untested one of two bare traces).

What is compared is what the traces hold: on a GPU trace the GPU time parts, kernels and
operators by the GPU time of their kernels; on a CPU-only trace operators by self CPU time
(`ops.metric`), and the step time is the profiler step's host time, since there is no GPU
span (issue #32: a CPU study's diff showed only 0.0 µs GPU tables and "Step time — → —").

A percentage change of a tiny base says nothing (aten::mul_ +7502.8%: 2 µs → 152 µs): a row
whose base is under SMALL_BASE_PCT of the base step, or under SMALL_BASE_US, gets no
`change_pct` and `small_base: true`; its µs change is still shown and ranked.
"""

from __future__ import annotations

import msgspec

from trainprof.ranking import ranking_gain
from trainprof.recordtypes.analysis import Finding, Rank
from trainprof.recordtypes.base import as_struct, or_default
from trainprof.recordtypes.diff import Changes, Diff, FindingDelta, Pair, Row, Runs, Side, StepTime, Verdict
from trainprof.recordtypes.timeline import KernelRow, OpRow
from trainprof.vocab import idle, parts
from trainprof.vocab.idle import CAUSES
from trainprof.vocab.parts import PARTS

CAUSE_LABEL = {idle.DATA_LOADING: "data-loading idle", idle.ALLOCATOR: "allocator idle", idle.HOST_SYNC: "host-sync idle",
               idle.HOST_LAUNCH: "launch-overhead idle", idle.OTHER: "other idle", idle.UNATTRIBUTED: "unattributed idle"}
OF = " of step time"
STORY_MIN_PCT = 5.0  # a change enters the story when it moves ≥ this % of the base step time
# A base below this share of the step (or below SMALL_BASE_US) gets no percentage change:
# 1% of a step is below the run-to-run noise of a step on a shared machine (a few %), and
# 10 µs is a few launches' overhead, where one extra call doubles the figure.
SMALL_BASE_PCT = 1.0
SMALL_BASE_US = 10.0


def gpu_steps(rank: Rank) -> int:
    """Steps that launched GPU work (all steps on a CPU-only trace); at least 1."""
    per = or_default(rank.per_step, None) or []
    n = sum(1 for s in per if or_default(s.span_us, None))
    return max(1, n or or_default(rank.steps, 0) or 0)


def per_step_parts(rank: Rank) -> dict[str, float]:
    """Mean µs per step of each GPU time part, from the per-step records."""
    rows = [s for s in or_default(rank.per_step, None) or [] if or_default(s.span_us, None)]
    if not rows:  # no steps: the whole-trace breakdown is the one "step"
        tb = rank.temporal_breakdown
        return {p: float(or_default(getattr(tb, f"{p}_us"), 0.0)) for p in PARTS}
    return {p: sum(float(or_default(getattr(s, f"{p}_us"), 0.0)) for s in rows) / len(rows) for p in PARTS}


def _table(rows: list[OpRow] | list[KernelRow], n: float) -> dict[str, dict]:
    return {r.name: {"total_us": or_default(r.total_us, 0.0) / n,
                     "class": or_default(getattr(r, "kind", None), None)} for r in rows}


def step_us(rank: Rank) -> float | None:
    """The step time a diff compares: the median GPU step span, or on a CPU-only trace the
    mean host time of the profiler steps."""
    if or_default(rank.step_time_us, None):
        return rank.step_time_us
    cpu = [p.cpu_us for p in or_default(rank.per_step, None) or [] if or_default(p.cpu_us, None)]
    return sum(cpu) / len(cpu) if cpu and not or_default(rank.has_gpu, False) else None


def _delta(base: dict[str, dict], new: dict[str, dict], top: int, step_base_us: float | None = None,
           metric: str | None = None) -> Changes:
    names = set(base) | set(new)
    small = max(SMALL_BASE_US, SMALL_BASE_PCT / 100.0 * (step_base_us or 0.0))
    rows = []
    for n in names:
        b = base.get(n, {}).get("total_us", 0.0)
        a = new.get(n, {}).get("total_us", 0.0)
        rows.append(Row(name=n, base_us_per_step=b, new_us_per_step=a, delta_us_per_step=a - b,
                        change_pct=100.0 * (a - b) / b if b >= small else None, small_base=0 < b < small,
                        status="added" if n not in base else "removed" if n not in new else "changed",
                        kind=(new.get(n) or base.get(n) or {}).get("class")))
    rows.sort(key=lambda r: (-abs(r.delta_us_per_step), r.name))
    return Changes(
        metric=metric,
        top=rows[:top],
        added=sorted((r.name for r in rows if r.status == "added"))[:top],
        removed=sorted((r.name for r in rows if r.status == "removed"))[:top],
        n_added=sum(r.status == "added" for r in rows),
        n_removed=sum(r.status == "removed" for r in rows),
    )


def _pair(b: float, a: float) -> Pair:
    return Pair(base_us_per_step=b, new_us_per_step=a, delta_us_per_step=a - b)


def idle_causes(base: Rank, new: Rank) -> dict[str, Pair]:
    """Idle time per cause, per step: the per-step idle (per_step_parts, the figure the
    temporal table shows) split by the causes' shares of the idle breakdown (idle.py, over
    the breakdown's window), so the cause rows add up to the idle row."""
    def split(rank: Rank) -> dict[str, float]:
        ib = rank.idle_breakdown
        idle, total = per_step_parts(rank)["idle"], float(ib.idle_us or 0.0)
        return {c: idle * float(or_default(getattr(ib, f"{c}_us"), 0.0)) / total if total > 0 else 0.0
                for c in CAUSES}

    b, a = split(base), split(new)
    return {c: _pair(b[c], a[c]) for c in CAUSES}


def findings_delta(base: list[Finding], new: list[Finding]) -> list[FindingDelta]:
    """Findings by id: appeared (only in NEW), disappeared (only in BASE), changed (gain moved
    by ≥ 1 point of step time) or unchanged. Each side's figures are its findings' own fields
    (`estimated_gain_pct`, `projected_gain_pct`), never recomputed: the report of that side
    shows the same numbers."""
    fb = {f.id: f for f in base}
    fn = {f.id: f for f in new}
    out = []
    for fid in sorted(set(fb) | set(fn)):
        b, a = fb.get(fid), fn.get(fid)
        gb = or_default(b.estimated_gain_pct, None) if b else None
        ga = or_default(a.estimated_gain_pct, None) if a else None
        status = ("appeared" if b is None else "disappeared" if a is None
                  else "changed" if abs((ga or 0.0) - (gb or 0.0)) >= 1.0 else "unchanged")
        out.append(FindingDelta(id=fid, title=or_default((a or b).title, None), status=status,
                                base_gain_pct=gb, new_gain_pct=ga,
                                base_projected_pct=or_default(b.projected_gain_pct, None) if b else None,
                                new_projected_pct=or_default(a.projected_gain_pct, None) if a else None))
    order = {"appeared": 0, "disappeared": 1, "changed": 2, "unchanged": 3}
    # within a status, by the one ranking key of every findings list (projection.ranking_gain)
    out.sort(key=lambda f: (order[f.status], -max(ranking_gain(f.base_gain_pct, f.base_projected_pct),
                                                  ranking_gain(f.new_gain_pct, f.new_projected_pct))))
    return out


def gain_words(gain: float | None, projected: float | None, of: str = "") -> str:
    """A finding's figures as its analysis says them (report/findings_terminal.py): "up to
    38.0% of step time, projected 16.8%" (`of`: " of step time"; a table cell leaves it out)."""
    if not gain:
        return "a caveat, no gain claimed"
    return f"up to {gain:.1f}%{of}" + (f", projected {projected:.1f}%" if projected is not None else "")


def _ms(us: float) -> str:
    if abs(us) < 0.5:
        return "0"
    return f"{us / 1e3:.3g} ms" if abs(us) >= 1000 else f"{us:.0f} µs"


def story(d: Diff, phase_label: dict[str, str] | None = None) -> list[str]:
    """The changes that matter, in words, biggest first within each group, in the order a
    reader acts on them: the runs' step split (`phase_label`: its phases in words,
    analysis/run/step_split.PHASE_LABEL, which job/ does not import), the traces' idle causes
    and GPU parts, the findings that appeared or went, then (a CPU trace) its operators."""
    lines = []
    if d.runs is not None and d.verdict is not None and d.verdict.call in ("faster", "slower"):
        # the split of a change inside the noise moved with the machine: the verdict says so, the table shows it
        step = sum(v.base_us_per_step for v in d.runs.split.values())
        moves = [(abs(v.delta_us_per_step), f"{(phase_label or {}).get(p, p)} {_ms(v.base_us_per_step)} → "
                  f"{_ms(v.new_us_per_step)} per step") for p, v in d.runs.split.items()]
        lines += [t for size, t in sorted(moves, key=lambda m: -m[0]) if size >= max(STORY_MIN_PCT / 100.0 * step, 1.0)]
    step = d.step_time_us.base or 0.0
    floor = max(STORY_MIN_PCT / 100.0 * step if step else 0.0, 1.0)
    moves = []
    for c, v in d.idle_causes.items():
        moves.append((abs(v.delta_us_per_step), f"{CAUSE_LABEL[c]} {_ms(v.base_us_per_step)} → "
                      f"{_ms(v.new_us_per_step)} per step"))
    for p in (parts.COMPUTE, parts.COMMUNICATION, parts.MEMCPY):
        v = d.temporal_breakdown.get(p)
        if v is not None:
            moves.append((abs(v.delta_us_per_step), f"{p} {_ms(v.base_us_per_step)} → "
                          f"{_ms(v.new_us_per_step)} per step"))
    lines += [text for size, text in sorted(moves, key=lambda m: -m[0]) if size >= floor]
    for f in d.findings:
        if f.status == "appeared":
            lines.append(f"new finding: {f.title} ({f.id}, {gain_words(f.new_gain_pct, f.new_projected_pct, OF)})")
        elif f.status == "disappeared":
            lines.append(f"gone: {f.title} ({f.id}, was {gain_words(f.base_gain_pct, f.base_projected_pct, OF)})")
    if d.runs is None and d.base and d.new and d.base.file and d.new.file and not d.base.has_gpu and not d.new.has_gpu:
        # a CPU trace without runs: its operators (with runs, the split says it from the measured steps,
        # and a trace's two profiled steps move with the machine's load)
        for r in d.ops.top:
            if abs(r.delta_us_per_step) >= floor:
                lines.append(f"{r.name} {_ms(r.base_us_per_step)} → {_ms(r.new_us_per_step)} per step "
                             "(self CPU time)")
    return lines


def _side(rank: Rank, n: int) -> Side:
    gpu = bool(or_default(rank.has_gpu, False))
    return Side(file=rank.file, device_name=or_default(rank.device_name, None), steps=or_default(rank.steps, None),
                gpu_steps=n if gpu else None, has_gpu=gpu)


def trace_verdict(d: Diff) -> Verdict:
    """The headline when a side has no run.json: the traces' step times, untested (a trace
    holds the few profiled steps, too few for an interval; run.json holds the measured ones)."""
    st = d.step_time_us
    return Verdict(call="untested", per="step", ratio=st.speedup,
                   why="no noise test: " + ("a side has no trace and no run.json to compare" if not st.speedup else
                                            "a trace holds only the profiled steps; give both run folders (run.json: "
                                            "the measured steps) to tell a change from noise"))


def with_runs(d: Diff, runs: Runs | None, verdict: Verdict | None, phase_label: dict[str, str] | None = None) -> Diff:
    """`d` with the runs' comparison and the verdict (the trace's when `verdict` is None),
    its story told again with them."""
    d = msgspec.structs.replace(d, runs=runs, verdict=verdict or trace_verdict(d))
    return msgspec.structs.replace(d, story=story(d, phase_label))


def diff_ranks(base: Rank | dict, new: Rank | dict, top: int = 10) -> Diff:
    """diff.json: two rank records compared per step (a dict, a record as written, is read
    as its Struct); the findings are each rank's own."""
    base, new = as_struct(base, Rank), as_struct(new, Rank)
    nb, nn = gpu_steps(base), gpu_steps(new)
    sb, sn = step_us(base), step_us(new)
    pb, pn = per_step_parts(base), per_step_parts(new)
    gpu = bool(or_default(base.has_gpu, False) or or_default(new.has_gpu, False))
    metric = next((or_default(o.metric, None) for o in (base.top_ops or new.top_ops)[:1]), None)
    d = Diff(
        base=_side(base, nb),
        new=_side(new, nn),
        step_time_us=StepTime(base=sb, new=sn, speedup=(sb / sn) if sb and sn else None,
                              change_pct=100.0 * (sn - sb) / sb if sb and sn else None,
                              source="median GPU step span" if gpu else "mean host time of the profiler steps"),
        temporal_breakdown={p: _pair(pb[p], pn[p]) for p in PARTS},
        idle_causes=idle_causes(base, new),
        findings=findings_delta(or_default(base.findings, None) or [], or_default(new.findings, None) or []),
        ops=_delta(_table(base.top_ops, nb), _table(new.top_ops, nn), top, sb,
                   metric or ("gpu" if gpu else "self_cpu")),
        kernels=_delta(_table(base.top_kernels, nb), _table(new.top_kernels, nn), top, sb),
    )
    return msgspec.structs.replace(d, story=story(d))
