"""Communication per parallelism axis: the matched collectives (and the point-to-point ops)
grouped by the axis of their process group (analysis/job/axes.py).

Per rank r and axis A, over r's instances on A (matched collectives; send/recv, which are
not matched as collectives, by their own instances):

    time_r(A)    = Σ (end − arrival)
    exposed_r(A) = Σ (end − arrival) · (1 − overlap/100)   (overlap: compute beside it on r)
    wait_r(A)    = Σ r's waits for the last arriver at A's collectives (collectives_waits.py)
    share_r(A)   = time_r(A) / Σ r's profiled steps

The axis' figures are means over the ranks with instances on it; busbw = Σ S·factor / Σ
latency over its sized matched collectives. The straggler of an axis is the rank the others
waited for most there (Σ over the waiting ranks): a TP group waits for its slowest rank at
every layer, a DP group once per bucket, so one slow rank costs each axis differently.
"""

from __future__ import annotations

from collections import defaultdict

from trainprof.analysis.job.axes import classify, groups_of
from trainprof.analysis.job.collectives_waits import Aligned
from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.collectives import AxisSummary, GroupAxis, MatchedCollective
from trainprof.vocab import collectives as cv


def job_world(a: Aligned) -> int:
    sizes = [max(or_default(b.group_size, {}).values() or [0]) for b in a.blocks.values()]
    ranks = [max(g.ranks) + 1 for b in a.blocks.values() for g in or_default(b.process_groups, None) or []]
    return max(sizes + ranks + [len(a.blocks)])


def group_axes(a: Aligned) -> list[GroupAxis]:
    groups = groups_of(a.blocks)
    mesh = next((b.mesh for b in a.blocks.values() if or_default(b.mesh, None) is not None), None)
    cls = classify(groups, job_world(a), [tuple(d) for d in mesh.dims] if mesh else None)
    return [GroupAxis(name=g.name, desc=g.desc, ranks=list(g.ranks), axis=cls[g.name][0], rule=cls[g.name][1])
            for g in sorted(groups.values(), key=lambda g: (len(g.name), g.name))]


def axis_summaries(a: Aligned, rows: list[MatchedCollective], groups: list[GroupAxis]) -> list[AxisSummary]:
    axis_of = {g.name: g.axis for g in groups}
    time: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    exposed: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    count: dict[str, int] = defaultdict(int)
    nbytes: dict[str, float] = defaultdict(float)

    def add(axis: str, r: int, i: int) -> None:
        b = a.blocks[r]
        d = a.end[r][i] - a.arrive[r][i]
        ov = (or_default(b.compute_overlap_pct, None) or [None] * len(b.op))[i]
        time[axis][r] += d
        exposed[axis][r] += d * (1.0 - (ov or 0.0) / 100.0)

    for (_key, _, c), row in zip(a.matching.collectives, rows):
        axis = axis_of.get(row.group, "unknown")
        count[axis] += 1
        nbytes[axis] += row.bytes or 0
        for r, i in c.items():
            add(axis, r, i)
    for r, b in a.blocks.items():  # point-to-point: each rank's own instances
        for i, (op, g) in enumerate(zip(b.op, b.group)):
            if op in cv.ONE_SIDED:
                axis = axis_of.get(g, "unknown")
                count[axis] += op == cv.SEND  # a transfer counted once, at its sender
                nbytes[axis] += (b.bytes[i] or 0) if op == cv.SEND else 0
                if op == cv.RECV:  # gloo's send returns at once; the receiver is what waits
                    add(axis, r, i)
    wait: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    caused: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for r, xs in a.waits.intervals.items():
        for s, e, last, ci in xs:
            axis = axis_of.get(rows[ci].group, "unknown")
            wait[axis][r] += e - s
            caused[axis][last] += e - s
    steps = {r: _steps_us(b) for r, b in a.blocks.items()}
    out = []
    for axis in sorted(time, key=lambda x: -_mean(time[x].values())):
        ranks = sorted(time[axis])
        t, x = _mean(time[axis].values()), _mean(exposed[axis].values())
        shares = [100.0 * time[axis][r] / steps[r] for r in ranks if steps[r]]
        xshares = [100.0 * exposed[axis][r] / steps[r] for r in ranks if steps[r]]
        cz = caused.get(axis, {})
        culprit = max(cz, key=lambda k: (cz[k], -k)) if cz else None
        total_wait = sum(wait[axis].values())
        out.append(AxisSummary(
            axis=axis, groups=sorted(g.name for g in groups if g.axis == axis),
            rules=sorted({g.rule for g in groups if g.axis == axis}),
            collectives=count[axis], bytes=nbytes[axis], time_us=t, exposed_us=x,
            wait_us=_mean(wait[axis].get(r, 0.0) for r in ranks),
            share_pct=_mean(shares) if shares else None, exposed_share_pct=_mean(xshares) if xshares else None,
            compute_overlap_pct=100.0 * (1.0 - x / t) if t > 0 else None,
            busbw_gbs=_busbw([row for row in rows if axis_of.get(row.group) == axis]),
            straggler_rank=culprit if culprit is not None and cz[culprit] > 0 else None,
            straggler_caused_us=cz[culprit] if culprit is not None else 0.0,
            straggler_share_pct=100.0 * cz[culprit] / total_wait if culprit is not None and total_wait > 0 else None))
    return out


def _steps_us(b) -> float:
    ends = or_default(b.step_cpu_end_us, None) or []
    return float(sum(e - s for s, e in zip(b.step_cpu_start_us, ends)))


def _mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0


def _busbw(rows: list[MatchedCollective]) -> float | None:
    sized = [x for x in rows if x.bytes and x.busbw_gbs is not None and x.algbw_gbs]
    lat = sum(x.latency_us for x in sized) * 1e-6
    if not sized or lat <= 0:
        return None
    return sum(x.bytes * x.busbw_gbs / x.algbw_gbs for x in sized) / lat / 1e9
