"""Collectives across ranks: who arrived last, how long the others waited, what bandwidth.

Input: each rank's `collectives` block (analysis/job/collectives.py). The instances that are the
same collective on every rank of its group are found by content (analysis/job/collectives_align.py:
sequence numbers where recorded, else signatures aligned per process group, ties broken by
the clocks); waits are computed on the aligned clocks (analysis/job/collectives_waits.py).

Per matched collective, with times on the reference (lowest) rank's clock:

    skew      = max_r arrival_r − min_r arrival_r            (how far apart the ranks came)
    latency   = min_r (end_r − arrival_r)                    (the last arriver's duration:
                                                              transfer time without waiting)
    algbw     = S / latency,  busbw = algbw · factor(op, n)  (nccl-tests, analysis/job/busbw.py)
    overlap   = median_r (share of [arrival_r, end_r] that rank r spent on compute)

Per (group, op): medians of the above, and the aggregate busbw Σ S / Σ latency × factor — the
figure nccl-tests and `trainprof bench allreduce` report (they time a loop: a mean).

Clock alignment: the ranks' timestamps are first put on one nominal clock (trace time + the
trace's baseTimeNanoseconds, where every rank records one). A collective ends at (nearly) the
same instant on every rank — no rank can finish before the last one's data arrived — so the
offset of rank r is the median over its matched collectives of (end_r − end_ref); the median
ignores the few whose ends differ (a send/recv pair, a rank descheduled at the end). Ranks
that share no collective with the reference are reached through a rank that does.
TraceLens' NCCL analyser uses the same end-alignment idea.

Per rank (the job findings' inputs, diagnose/job_rules.py): its waits (a union), the waits
it caused when it came last, and `others_wait_us`, the mean other rank's wait attributed to
it (disjoint between culprits), with `gain_pct` = others_wait / span. The culprits' gains
therefore sum to at most `wait_bound_pct` = Σ_r wait_r / ((n − 1) · span): each gain is a mean
over the n − 1 ranks other than the culprit.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

import numpy as np

from trainprof.analysis.job.axes_table import axis_summaries, group_axes
from trainprof.analysis.job.collectives_align import ONE_SIDED, Matching, match as align
from trainprof.analysis.job.collectives_table import rows as table_rows, summaries
from trainprof.analysis.job.collectives_waits import Aligned, Waits, collective_waits, first_collectives
from trainprof.analysis.job.lateness import step_lateness
from trainprof.recordtypes.base import as_struct, or_default
from trainprof.recordtypes.collectives import Alignment, CollectiveRank, JobCollectives, MatchedCollective, \
    RankCollectives, WaitedFor

SLOWEST = 20  # rows of the slowest-collectives table (by skew); the summary covers them all
MAX_NOTES = 20  # notes kept in the record (the count of the rest is said)
WAITED_FOR = 5  # per rank, the culprits it waited for most
END_SPREAD_US = 1000.0  # the ends of one GPU collective spread less (NCCL: µs)


def analyse(blocks: dict[int, RankCollectives]) -> Aligned:
    """Align the ranks' collectives and compute the waits. `blocks`: at least two."""
    bases = {r: or_default(b.clock_base_us, None) for r, b in blocks.items()}
    ref = min(blocks)
    known = all(v is not None for v in bases.values())
    shift = {r: (bases[r] - bases[ref]) if known else 0.0 for r in blocks}
    nominal = {r: np.asarray(b.end_us, dtype=float) + shift[r] for r, b in blocks.items()}
    m = align(blocks, nominal)
    gpu = {r for r, b in blocks.items() if b.source != "gloo"}
    left_out = 0
    while True:  # offsets from the pairs; again without those that cannot be one collective
        residual = clock_offsets([c for _, _, c in m.collectives], nominal, ref)
        offsets = {r: float(residual.get(r, 0.0) - shift[r]) for r in blocks}
        arrive = {r: [x - offsets[r] for x in b.start_us] for r, b in blocks.items()}
        end = {r: [x - offsets[r] for x in b.end_us] for r, b in blocks.items()}
        dropped = _drop_inconsistent(m, arrive, end, gpu)  # each pass removes some: it ends
        if not dropped:
            break
        left_out += dropped
    if left_out:
        m.notes.append(f"{left_out} paired collectives end too far apart on the aligned clocks to be one "
                       "collective (two collectives the signatures could not tell apart): left out")
    matched_idx: dict[int, set[int]] = defaultdict(set)
    for _, _, c in m.collectives:
        for r, i in c.items():
            matched_idx[r].add(i)
    first = {r: first_collectives(blocks[r], matched_idx[r]) for r in blocks}
    w = collective_waits([c for _, _, c in m.collectives], arrive, end, first)
    return Aligned(blocks, m, offsets, arrive, end, w)


def _drop_inconsistent(m: Matching, arrive: dict[int, list[float]], end: dict[int, list[float]],
                       gpu: set[int]) -> int:
    """Leave out the matched GPU collectives whose ends, on the aligned clocks, spread over
    more than END_SPREAD_US and more than the collective's shortest duration: a NCCL/RCCL
    collective ends together on every rank (within µs: its kernels finish as the last data
    arrives), so such a pair is two different collectives that the signatures could not
    tell apart (older traces without sizes). Not for gloo: a CPU worker thread descheduled
    at the end spreads the ends of one collective by milliseconds on a loaded host.
    Returns how many were left out."""
    keep, out = [], 0
    for key, pos, c in m.collectives:
        ends = [end[r][i] for r, i in c.items()]
        spread = max(ends) - min(ends)
        if (spread > END_SPREAD_US and set(c) <= gpu
                and spread > min(end[r][i] - arrive[r][i] for r, i in c.items())):
            out += 1
            for r in c:
                m.matched[r] -= 1
        else:
            keep.append((key, pos, c))
    if out:
        m.collectives = keep
    return out


def clock_offsets(collectives: list[dict[int, int]], ends: dict[int, np.ndarray], ref: int) -> dict[int, float]:
    """Per rank, the median of (end_r − end_q) over the collectives it shares with a rank q
    whose offset is known, starting from the reference (offset 0)."""
    out = {ref: 0.0}
    todo = set(ends) - {ref}
    while todo:
        progress = False
        for r in sorted(todo):
            q = next((q for q in sorted(out) if any(r in c and q in c for c in collectives)), None)
            if q is None:
                continue
            diffs = [ends[r][c[r]] - ends[q][c[q]] for c in collectives if r in c and q in c]
            out[r] = out[q] + float(statistics.median(diffs))
            todo.discard(r)
            progress = True
        if not progress:
            break
    return out


def with_instances(blocks: dict[int, RankCollectives | dict | None]) -> dict[int, RankCollectives]:
    """The ranks whose block holds instances, typed (a hand-written block, a dict, is
    converted: planted tests and scripts build them so)."""
    typed = {r: as_struct(b, RankCollectives) for r, b in blocks.items() if b}
    return {r: b for r, b in typed.items() if b.op}


def job_collectives(blocks: dict[int, RankCollectives | dict | None]) -> JobCollectives | None:
    """The job's collectives record; None with fewer than two ranks holding collectives."""
    blocks = with_instances(blocks)
    if len(blocks) < 2:
        return None
    return _job(analyse(blocks))


def match(blocks: dict[int, RankCollectives | dict | None]) -> tuple[list[MatchedCollective], Waits, dict[int, float]]:
    """Per matched collective its row (in group, reference order); the waits; the offsets."""
    a = analyse(with_instances(blocks))
    return table_rows(a), a.waits, a.offsets


def wait_intervals(blocks: dict[int, RankCollectives | dict | None]
                   ) -> tuple[dict[int, float], dict[int, list[tuple[float, float, str]]]]:
    """(offsets, per rank its waits as (start, end, label) on the reference clock)."""
    blocks = with_instances(blocks)
    if len(blocks) < 2:
        return {}, {}
    a = analyse(blocks)
    out: dict[int, list[tuple[float, float, str]]] = {r: [] for r in blocks}
    for r, xs in a.waits.intervals.items():
        for s, e, last, ci in xs:
            key, _, c = a.matching.collectives[ci]
            b = blocks[r]
            out[r].append((s, e, f"wait for rank {last} ({b.op[c[r]]} #{b.seq[c[r]]}, group {key})"))
    return a.offsets, out


def _job(a: Aligned) -> JobCollectives:
    blocks, m, w = a.blocks, a.matching, a.waits
    ranks = sorted(blocks)
    n = len(ranks)
    rows = table_rows(a)
    span = _job_span(a)
    # send/recv are paired as transfers, not matched as collectives (collectives_align.py)
    counts = {r: sum(op not in ONE_SIDED for op in blocks[r].op) for r in ranks}
    # the mean other rank's wait attributed to each culprit (disjoint: Σ_k W_r(k) = wait_r)
    others = defaultdict(float)
    for r in ranks:
        for k, us in w.attributed.get(r, {}).items():
            others[k] += us / (n - 1)
    total_wait = sum(w.wait_us.get(r, 0.0) for r in ranks)
    per_rank = [_rank_row(r, counts[r], m, w, others, total_wait, span, n, a.offsets[r]) for r in ranks]
    notes = _edge_notes(m, ranks) + m.notes
    if w.clipped:
        notes.append(f"{w.clipped} waits were longer than the waiting rank's own collective (it would have "
                     f"finished before the last rank arrived: up to {w.clipped_max_us:,.0f} µs): clipped to it; "
                     "the pairing or the clocks are off there")
    if len(notes) > MAX_NOTES:
        notes = notes[:MAX_NOTES] + [f"... and {len(notes) - MAX_NOTES} more"]
    return JobCollectives(
        ranks=n,
        # analysed ranks < the job's world size: waits and skews are among these ranks only
        world_size=max([max(or_default(b.group_size, {}).values() or [0]) for b in blocks.values()] + [n]),
        matched=len(m.collectives),
        unmatched={str(r): counts[r] - m.matched[r] for r in ranks if counts[r] != m.matched[r]},
        consistent=all(counts[r] == m.matched[r] for r in ranks),
        alignment=Alignment(**m.by),
        total_wait_us=total_wait,
        # the matched collectives' window on the aligned clock, first arrival to last end:
        # what "share of the time" means for the job findings
        span_us=span,
        wait_bound_pct=100.0 * total_wait / ((n - 1) * span) if span > 0 else 0.0,
        clipped_waits=w.clipped,
        per_rank=per_rank,
        lateness=step_lateness(blocks, a.offsets),
        groups=summaries(rows),
        process_groups=(gax := group_axes(a)),
        axes=axis_summaries(a, rows, gax),
        slowest=sorted(rows, key=lambda x: -x.skew_us)[:SLOWEST],
        notes=notes,
    )


def _edge_notes(m: Matching, ranks: list[int]) -> list[str]:
    """One line per distinct (head, tail) drop: which ranks' windows reach past the others'."""
    by: dict[tuple[int, int], list[int]] = defaultdict(list)
    for r in ranks:
        if m.dropped_head[r] or m.dropped_tail[r]:
            by[(m.dropped_head[r], m.dropped_tail[r])].append(r)
    return [f"rank {', '.join(map(str, rs))}: {h} collectives at the start and {t} at the end of the window are "
            "not in every rank's window (the profiler windows differ): left out" for (h, t), rs in sorted(by.items())]


def _job_span(a: Aligned) -> float:
    if not a.matching.collectives:
        return 0.0
    lo = min(a.arrive[r][i] for _, _, c in a.matching.collectives for r, i in c.items())
    hi = max(a.end[r][i] for _, _, c in a.matching.collectives for r, i in c.items())
    return hi - lo


def _rank_row(r: int, count: int, m: Matching, w: Waits, others: dict, total_wait: float, span: float,
              n: int, offset: float) -> CollectiveRank:
    caused = w.caused_us.get(r, 0.0)
    waited_for = sorted(w.attributed.get(r, {}).items(), key=lambda kv: (-kv[1], kv[0]))[:WAITED_FOR]
    return CollectiveRank(
        rank=r, collectives=count, matched=m.matched[r],
        dropped_head=m.dropped_head[r], dropped_tail=m.dropped_tail[r],
        wait_us=w.wait_us.get(r, 0.0), span_us=w.span_us.get(r, 0.0),
        caused_wait_us=caused, last_count=w.last_count.get(r, 0),
        # disjoint shares of the job's waits (they sum to 100% over the ranks)
        caused_share_pct=100.0 * others[r] * (n - 1) / total_wait if total_wait > 0 else 0.0,
        others_wait_us=others[r],
        gain_pct=100.0 * others[r] / span if span > 0 else 0.0,
        first_collective_pct=100.0 * w.first_caused_us.get(r, 0.0) / caused if caused > 0 else 0.0,
        waited_for=[WaitedFor(rank=k, wait_us=us) for k, us in waited_for],
        clock_offset_us=offset)
