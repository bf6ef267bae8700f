"""Who waited for whom at the collectives, on the aligned clock (lateness where it costs).

Per complete collective c (analysis/job/collectives_align.py) with its ranks' kernels (or gloo
calls) at [arrival_r, end_r] on the reference clock:

    last(c)   = the rank with the latest arrival (ties: the lowest rank)
    wait_r(c) = min(arrival_last − arrival_r, end_r − arrival_r)

A rank cannot finish a collective before the last rank arrived, so a wait longer than its
own kernel means the pairing or the clocks are wrong there: it is clipped to the kernel and
counted (`clipped_waits`, with the largest excess). Per rank:

    wait_r     = |∪_c [arrival_r(c), arrival_r(c) + wait_r(c)]|    (collectives on several
                  streams overlap: a union, so wait_r ≤ span_r by construction)
    span_r     = last end − first arrival over its matched collectives
    caused_k   = Σ_{c: last(c) = k} Σ_r wait_r(c)                   (the others' waits at the
                  collectives where k came last)
    W_r(k)     = the part of wait_r attributed to k: each instant of r's union goes to the
                  covering wait that ends latest (the one still holding r there), so
                  Σ_k W_r(k) = wait_r and no instant counts for two culprits.

Host step entry plays no part: with asynchronous launches the CPU runs ahead of the GPU by a
varying amount, and only the GPU's arrival makes the others wait (analysis/job/lateness.py keeps
the host figures as information).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field

from trainprof.analysis.job.collectives_align import Matching
from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.collectives import RankCollectives


@dataclass
class Waits:
    last: list[int] = field(default_factory=list)  # per collective
    skew_us: list[float] = field(default_factory=list)
    clipped: int = 0
    clipped_max_us: float = 0.0
    wait_us: dict[int, float] = field(default_factory=dict)
    span_us: dict[int, float] = field(default_factory=dict)
    caused_us: dict[int, float] = field(default_factory=dict)
    last_count: dict[int, int] = field(default_factory=dict)
    first_caused_us: dict[int, float] = field(default_factory=dict)  # caused at its steps' first collectives
    attributed: dict[int, dict[int, float]] = field(default_factory=dict)  # waiting rank -> {culprit: µs}
    intervals: dict[int, list[tuple[float, float, int, int]]] = field(default_factory=dict)  # (s, e, culprit, c)


@dataclass
class Aligned:
    """Everything the job record and the Perfetto wait track are built from."""

    blocks: dict[int, RankCollectives]
    matching: Matching
    offsets: dict[int, float]  # µs to subtract from a rank's trace time: reference clock
    arrive: dict[int, list[float]]
    end: dict[int, list[float]]
    waits: Waits


def collective_waits(collectives: list[dict[int, int]], arrive: dict[int, list[float]],
                     end: dict[int, list[float]], first_of_step: dict[int, set[int]]) -> Waits:
    """`collectives`: per collective, rank -> instance index; `arrive`/`end`: per rank, per
    instance, on the reference clock; `first_of_step`: per rank, the instances that are the
    first collective of one of its profiler steps."""
    ranks = sorted({r for c in collectives for r in c})
    w = Waits(wait_us=dict.fromkeys(ranks, 0.0), span_us=dict.fromkeys(ranks, 0.0),
              caused_us=dict.fromkeys(ranks, 0.0), last_count=dict.fromkeys(ranks, 0),
              first_caused_us=dict.fromkeys(ranks, 0.0), intervals={r: [] for r in ranks})
    lo: dict[int, float] = {}
    hi: dict[int, float] = {}
    for ci, c in enumerate(collectives):
        a = {r: arrive[r][i] for r, i in c.items()}
        latest = max(a.values())
        last = min(r for r in c if a[r] == latest)
        w.last.append(last)
        w.skew_us.append(latest - min(a.values()))
        w.last_count[last] += 1
        caused = 0.0
        for r, i in c.items():
            lo[r] = min(lo.get(r, a[r]), a[r])
            hi[r] = max(hi.get(r, end[r][i]), end[r][i])
            own = max(0.0, end[r][i] - a[r])
            wait = latest - a[r]
            if wait > own:
                w.clipped += 1
                w.clipped_max_us = max(w.clipped_max_us, wait - own)
                wait = own
            if r != last and wait > 0:
                w.intervals[r].append((a[r], a[r] + wait, last, ci))
                caused += wait
        w.caused_us[last] += caused
        if c[last] in first_of_step.get(last, ()):
            w.first_caused_us[last] += caused
    for r in ranks:
        w.span_us[r] = hi[r] - lo[r] if r in lo else 0.0
        w.attributed[r] = attribute(w.intervals[r])
        w.wait_us[r] = sum(w.attributed[r].values(), 0.0)
    return w


def attribute(intervals: list[tuple[float, float, int, int]]) -> dict[int, float]:
    """Length of the union of the intervals, split by label: each instant goes to the covering
    interval that ends latest (ties: the lower label). O(n log n)."""
    out: dict[int, float] = defaultdict(float)
    if not intervals:
        return {}
    xs = sorted({x for s, e, _, _ in intervals for x in (s, e)})
    todo = sorted(intervals)
    heap: list[tuple[float, int]] = []  # (-end, label) of the open intervals
    j = 0
    for x0, x1 in zip(xs, xs[1:]):
        while j < len(todo) and todo[j][0] <= x0:
            heapq.heappush(heap, (-todo[j][1], todo[j][2]))
            j += 1
        while heap and -heap[0][0] <= x0:
            heapq.heappop(heap)
        if heap:
            out[heap[0][1]] += x1 - x0
    return dict(out)


def first_collectives(block: RankCollectives, indices: set[int]) -> set[int]:
    """The instances (among `indices`, the matched ones) that open one of the rank's profiler
    steps: the earliest-arriving matched instance launched in each step."""
    steps = or_default(block.step, None) or []
    first: dict[int, int] = {}
    for i in sorted(indices, key=lambda i: block.start_us[i]):
        s = steps[i] if i < len(steps) else None
        if s is not None and s not in first:
            first[s] = i
    return set(first.values())
