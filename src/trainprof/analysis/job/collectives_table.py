"""The matched collectives as a table: per collective its skew, latency, bandwidth and
overlap; per (group, op) their medians and the aggregate busbw (analysis/job/collectives_job.py
docstring has the formulas)."""

from __future__ import annotations

import statistics
from collections import defaultdict

from trainprof.analysis.job.busbw import FACTORS, bus_factor
from trainprof.analysis.job.collectives_waits import Aligned
from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.collectives import CollectiveGroup, MatchedCollective


def rows(a: Aligned) -> list[MatchedCollective]:
    rows = []
    for (_key, _, c), last, skew in zip(a.matching.collectives, a.waits.last, a.waits.skew_us):
        ranks = sorted(c)
        ref = a.blocks[ranks[0]]
        i0 = c[ranks[0]]
        arrive = [a.arrive[r][c[r]] for r in ranks]
        end = [a.end[r][c[r]] for r in ranks]
        latency = min(e - s for s, e in zip(arrive, end))
        size = next((a.blocks[r].bytes[c[r]] for r in ranks if a.blocks[r].bytes[c[r]] is not None), None)
        op, group = ref.op[i0], ref.group[i0]
        # the group's real size (a job analysed from a sample of its ranks keeps its factor)
        size_n = max([or_default(a.blocks[r].group_size, {}).get(group) or 0 for r in ranks] + [len(ranks)])
        alg = size / (latency * 1e-6) / 1e9 if size and latency > 0 else None
        bus = alg * bus_factor(op, size_n) if alg is not None and op in FACTORS else None
        ov = [p for p in (_at(or_default(a.blocks[r].compute_overlap_pct, None), c[r]) for r in ranks)
              if p is not None]
        rows.append(MatchedCollective(group=group, op=op, seq=ref.seq[i0], bytes=size,
                                      skew_us=skew, latency_us=latency, end_skew_us=max(end) - min(end),
                                      last_rank=last, algbw_gbs=alg, busbw_gbs=bus,
                                      compute_overlap_pct=statistics.median(ov) if ov else None))
    return rows


def _at(column: list | None, i: int):
    """column[i], None when the column is absent (a block written before it existed)."""
    return column[i] if column is not None and i < len(column) else None


def summaries(rows: list[MatchedCollective]) -> list[CollectiveGroup]:
    by: dict[tuple, list[MatchedCollective]] = defaultdict(list)
    for x in rows:
        by[(x.group, x.op)].append(x)
    out = []
    for (group, op), xs in sorted(by.items()):
        bus = [x.busbw_gbs for x in xs if x.busbw_gbs is not None]
        out.append(CollectiveGroup(group=group, op=op, count=len(xs),
                                   bytes=sum(x.bytes or 0 for x in xs),
                                   median_latency_us=statistics.median(x.latency_us for x in xs),
                                   median_skew_us=statistics.median(x.skew_us for x in xs),
                                   max_skew_us=max(x.skew_us for x in xs),
                                   median_busbw_gbs=statistics.median(bus) if bus else None,
                                   aggregate_busbw_gbs=_aggregate_busbw(xs),
                                   median_compute_overlap_pct=_median([x.compute_overlap_pct for x in xs])))
    return out


def _median(values: list) -> float | None:
    vs = [v for v in values if v is not None]
    return statistics.median(vs) if vs else None


def _aggregate_busbw(xs: list[MatchedCollective]) -> float | None:
    """Σ S / Σ latency × factor over a group's collectives of one op: the bandwidth of all of
    them taken together, the figure nccl-tests (and `trainprof bench`) report, which time a
    loop and divide by the count — a mean, where `median_busbw_gbs` is a median. Only rows
    with a size and a busbw count (the factor is the op's for the group's size)."""
    sized = [x for x in xs if x.bytes and x.busbw_gbs is not None and x.algbw_gbs]
    if not sized:
        return None
    factor = sized[0].busbw_gbs / sized[0].algbw_gbs
    total_s = sum(x.latency_us for x in sized) * 1e-6
    return sum(x.bytes for x in sized) / total_s / 1e9 * factor if total_s > 0 else None
