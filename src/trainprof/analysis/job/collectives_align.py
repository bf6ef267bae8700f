"""Which instance on each rank is the same collective: sequences aligned by content.

Profiler windows differ per rank (one rank's trace begins a few collectives earlier, with the
tail of the previous iteration), so the k-th collective of a rank is not the k-th of
another. Within one process group PyTorch issues collectives in the same order on every rank
(NCCL hangs otherwise), so each rank's sequence is a window onto one common sequence, and
the windows are aligned, per group, to a reference rank (the lowest rank in the group):

1. A recorded sequence number (`Seq`: PyTorch's number of the collective in its process
   group, on the NCCL kernel in recent Kineto or on its record_param_comms op; a block's
   `seq_id` column) pairs instances directly where every rank of the group has one on every
   instance but those at its window's edges (a kernel whose launch fell before the window).
2. Otherwise a shift alignment: rank r's i-th instance pairs with the reference's (i + d)-th.
   Every shift d whose overlap holds at least half of the shorter sequence is scored by
   the signatures in the overlap, signature = (op, message elements, dtype), the size only
   for ops whose message is the same on every rank (all_reduce, all_gather, reduce_scatter,
   broadcast, reduce). The shifts with the fewest mismatches (as a share of the overlap;
   none, when the windows only differ at their edges) are the candidates; mismatched
   positions within the chosen overlap are left out and counted.
3. Periodic windows (the same iteration repeated) make several shifts fit equally: the
   clocks break the tie. Ranks of one host share a clock and hosts are NTP-close, so the
   right shift is the one whose end-time differences have the smallest |median| + median
   absolute deviation; a shift by one period is off by a whole iteration. When the
   runner-up is within 2x of the best the clocks cannot tell: then the one shift that pairs
   only equal ProfilerStep numbers, else the largest overlap (noted as ambiguous).

Where the trace records no process group (older traces), each op is aligned on its own
(two groups' collectives can interleave differently on different ranks; one op's order is
kept within its group). A collective counts only where every rank of its group has it in
its window ("complete"); the rest are dropped at the window's edges or left out inside it,
counted per rank.

Cost: one vectorised comparison per shift, O(n·m) element compares per rank and group
(5,000 × 5,000 instances: 25M compares); with identical signatures every shift is a
candidate, and a coarse cost over all of them keeps the 16 nearest for the exact one
(docs/collectives.md, "Cost").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from trainprof.analysis.job.collectives_ops import SAME_SIZE_OPS
from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.collectives import RankCollectives
from trainprof.vocab import collectives as cv

AMBIGUOUS_RATIO = 2.0  # runner-up clock cost within this factor of the best: ambiguous
P2P_OPS, ONE_SIDED = cv.P2P, cv.ONE_SIDED
NEAREST = 16  # candidate shifts kept for the exact clock cost
CLOCK_SAMPLES = 65  # pairs per candidate shift for the clock cost (the median of 65 is stable)


class Side(NamedTuple):
    """One rank's instances of one group, in time order."""

    sig: np.ndarray  # signature codes
    end: np.ndarray  # ends on one nominal clock, µs
    step: np.ndarray | None = None  # ProfilerStep number of each launch, NaN where unknown
    seq: np.ndarray | None = None  # recorded sequence keys (-1: none, only at the window's edges)


@dataclass(frozen=True)
class PairAlignment:
    """Rank b against the reference a: (position in a, position in b) per paired instance."""

    pairs: list[tuple[int, int]]
    shift: int | None
    mismatched: int
    by: str  # seq | signature (one candidate) | clock | step | overlap (the tie-breaks, in order)
    alternative: int | None = None  # the runner-up shift where the choice was ambiguous
    costs: tuple[float, float] | None = None  # clock costs (chosen, runner-up), µs
    step_shift: int | None = None  # the shift the step numbers pointed to, where the clocks chose another


@dataclass
class Matching:
    """Complete collectives (ranks -> block index), and what was left out, per rank."""

    collectives: list[tuple[str, int, dict[int, int]]] = field(default_factory=list)  # (group key, ref pos, ...)
    matched: dict[int, int] = field(default_factory=dict)
    dropped_head: dict[int, int] = field(default_factory=dict)
    dropped_tail: dict[int, int] = field(default_factory=dict)
    by: dict[str, int] = field(default_factory=dict)  # alignments per method
    notes: list[str] = field(default_factory=list)


def group_key(group: str, op: str) -> str:
    """A recorded process group is one sequence; without one, each op is its own."""
    return group if group != "default" else f"default/{op}"


def signatures(blocks: dict[int, RankCollectives]) -> dict[int, np.ndarray]:
    """Per rank, an int code per instance: equal codes = equal (op, size, dtype)."""
    codes: dict[tuple, int] = {}
    out = {}
    for r, b in blocks.items():
        nel = or_default(b.nelems, None) or [None] * len(b.op)
        dt = or_default(b.dtype, None) or [None] * len(b.op)
        out[r] = np.array([codes.setdefault((op, n if op in SAME_SIZE_OPS else None, d), len(codes))
                           for op, n, d in zip(b.op, nel, dt)], dtype=np.int64)
    return out


def align_pair(a: Side, b: Side) -> PairAlignment:
    """Align rank b's sequence to the reference a (module docstring)."""
    if a.seq is not None and b.seq is not None:
        where = {int(x): i for i, x in enumerate(a.seq.tolist()) if x >= 0}
        pairs = [(where[int(x)], j) for j, x in enumerate(b.seq.tolist()) if int(x) in where]
        bad = sum(a.sig[i] != b.sig[j] for i, j in pairs)
        return PairAlignment([(i, j) for i, j in pairs if a.sig[i] == b.sig[j]], None, int(bad), "seq")
    n, m = len(a.sig), len(b.sig)
    if not n or not m:
        return PairAlignment([], None, 0, "signature")
    min_overlap = max(1, (min(n, m) + 1) // 2)
    scored = {}  # shift -> mismatch share of the overlap
    for d in range(-(m - min_overlap), n - min_overlap + 1):
        lo, hi = max(0, -d), min(m, n - d)
        scored[d] = int(np.count_nonzero(a.sig[lo + d:hi + d] != b.sig[lo:hi])) / (hi - lo)
    best = min(scored.values())
    cands = [d for d, share in scored.items() if share <= best + 1e-12]
    extra: dict = {}
    if len(cands) == 1:
        d, by = cands[0], "signature"
    else:
        d, by, extra = _tie_break(a, b, cands)
    lo, hi = max(0, -d), min(m, n - d)
    pairs = [(j + d, j) for j in range(lo, hi) if a.sig[j + d] == b.sig[j]]
    return PairAlignment(pairs, d, (hi - lo) - len(pairs), by, **extra)


def _tie_break(a: Side, b: Side, cands: list[int]) -> tuple[int, str, dict]:
    """Among shifts the signatures cannot tell apart: the clocks where they are clear (the
    runner-up costs ≥ 2× the best), else the profiler step numbers where exactly one shift
    pairs equal steps only, else the largest overlap (the profilers of a job usually open on
    the same step)."""
    near = _nearest(a, b, cands)
    costs = sorted((_clock_cost(a, b, d), d) for d in near)
    agree = {d: _step_agreement(a, b, d) for d in near}
    clear = [d for d, x in agree.items() if x is not None and x >= 1.0 - 1e-9]
    step_d = clear[0] if len(clear) == 1 else None
    (c1, d1), (c2, d2) = costs[0], costs[1]
    if c2 >= AMBIGUOUS_RATIO * c1:
        return d1, "clock", ({"step_shift": step_d} if step_d is not None and step_d != d1 else {})
    if step_d is not None:
        return step_d, "step", {}
    d = min(cands, key=lambda x: (-_overlap(a, b, x), abs(x)))
    return d, "overlap", {"alternative": d2 if d == d1 else d1, "costs": (c1, c2)}


def _nearest(a: Side, b: Side, cands: list[int]) -> list[int]:
    """The NEAREST candidates by a coarse clock cost (9 evenly spaced pairs each, all shifts
    at once): identical signatures make every shift a candidate, and the exact cost of all
    of them is what the coarse one avoids (docs/collectives.md, "Cost")."""
    if len(cands) <= NEAREST:
        return cands
    d = np.asarray(cands)
    lo, hi = np.maximum(0, -d), np.minimum(len(b.sig), len(a.sig) - d)
    j = lo[:, None] + np.round(np.linspace(0, 1, 9)[None, :] * (hi - lo - 1)[:, None]).astype(np.int64)
    diff = b.end[j] - a.end[j + d[:, None]]
    med = np.median(diff, axis=1)
    cost = np.abs(med) + np.median(np.abs(diff - med[:, None]), axis=1)
    return [int(x) for x in d[np.argsort(cost, kind="stable")[:NEAREST]]]


def _overlap(a: Side, b: Side, d: int) -> int:
    return min(len(b.sig), len(a.sig) - d) - max(0, -d)


def _step_agreement(a: Side, b: Side, d: int) -> float | None:
    """Share of the signature-equal pairs at shift d whose launches carry the same
    ProfilerStep number (None: no pair has both numbers)."""
    if a.step is None or b.step is None:
        return None
    j = np.arange(max(0, -d), min(len(b.sig), len(a.sig) - d))
    j = j[(a.sig[j + d] == b.sig[j]) & ~np.isnan(a.step[j + d]) & ~np.isnan(b.step[j])]
    return float(np.mean(a.step[j + d] == b.step[j])) if len(j) else None


def _clock_cost(a: Side, b: Side, d: int) -> float:
    """|median| + median absolute deviation of the end differences at shift d (µs): ~0 for the
    right shift on a shared clock, about one iteration's length for a shift by a period."""
    j = np.arange(max(0, -d), min(len(b.sig), len(a.sig) - d))
    j = j[a.sig[j + d] == b.sig[j]]
    if not len(j):
        return float("inf")
    if len(j) > CLOCK_SAMPLES:
        j = j[np.linspace(0, len(j) - 1, CLOCK_SAMPLES).astype(np.int64)]
    diff = b.end[j] - a.end[j + d]
    med = float(np.median(diff))
    return abs(med) + float(np.median(np.abs(diff - med)))


def _seq_keys(b: RankCollectives) -> list | None:
    """The recorded sequence numbers as keys: PyTorch numbers a group's collectives and its
    point-to-point ops with two counters, so (number, is p2p) is the identity."""
    seq = or_default(b.seq_id, None)
    if seq is None:
        return None
    return [None if s is None else 2 * int(s) + (op in P2P_OPS) for s, op in zip(seq, b.op)]


def _edge_keyed(keys: list | None, idx: np.ndarray) -> np.ndarray | None:
    """One rank's sequence keys of a group (-1: none), or None where they cannot pair it: no
    key at all, or one missing between two recorded ones. A kernel at a window's edge whose
    launching op fell outside the window has no key (its op carried the number); it is left
    unpaired like any instance the other ranks' windows lack."""
    if keys is None:
        return None
    out = np.array([-1 if keys[i] is None else keys[i] for i in idx.tolist()], dtype=np.int64)
    have = np.flatnonzero(out >= 0)
    if not len(have) or len(have) != have[-1] - have[0] + 1:
        return None
    return out


def match(blocks: dict[int, RankCollectives], ends: dict[int, np.ndarray]) -> Matching:
    """Complete collectives across the ranks. `ends`: each rank's instance ends on one
    nominal clock (trace time + its clock base), for the tie-break."""
    sigs = signatures(blocks)
    seqs = {r: _seq_keys(b) for r, b in blocks.items()}
    steps = {r: np.array([np.nan if x is None else x for x in (or_default(b.step, None) or [None] * len(b.op))],
                         dtype=float) for r, b in blocks.items()}
    members: dict[str, dict[int, np.ndarray]] = {}
    for r in sorted(blocks):
        b = blocks[r]
        # gloo's send and recv are two ends of one transfer, not a collective of the group:
        # not matched here (each rank's instances, with their peer, count on the pipeline
        # axis: axes_table.py); NCCL's SendRecv kernel is matched as before
        keys = [None if op in ONE_SIDED else group_key(g, op) for g, op in zip(b.group, b.op)]
        for key in dict.fromkeys(k for k in keys if k is not None):
            members.setdefault(key, {})[r] = np.array([i for i, k in enumerate(keys) if k == key], dtype=np.int64)
    out = Matching(matched=dict.fromkeys(blocks, 0), dropped_head=dict.fromkeys(blocks, 0),
                   dropped_tail=dict.fromkeys(blocks, 0))
    for key in sorted(members):
        by_rank = members[key]
        if len(by_rank) < 2:
            continue
        keyed = {r: _edge_keyed(seqs[r], idx) for r, idx in by_rank.items()}
        seq_ok = all(k is not None for k in keyed.values())
        sides = {r: Side(sigs[r][idx], ends[r][idx], steps[r][idx], keyed[r] if seq_ok else None)
                 for r, idx in by_rank.items()}
        _match_group(key, by_rank, sides, out)
    return out


def _match_group(key: str, by_rank: dict[int, np.ndarray], sides: dict[int, Side], out: Matching) -> None:
    ranks = sorted(by_rank)
    ref = ranks[0]
    partners: dict[int, dict[int, int]] = {}  # ref position -> {rank: position}
    for r in ranks[1:]:
        al = align_pair(sides[ref], sides[r])
        out.by[al.by] = out.by.get(al.by, 0) + 1
        out.notes.extend(_notes(key, ref, r, al))
        for i, j in al.pairs:
            partners.setdefault(i, {})[r] = j
    done: dict[int, list[int]] = {r: [] for r in ranks}
    for i in sorted(partners):
        if len(partners[i]) == len(ranks) - 1:
            ranks_pos = {ref: i, **partners[i]}
            out.collectives.append((key, i, {r: int(by_rank[r][p]) for r, p in ranks_pos.items()}))
            for r, p in ranks_pos.items():
                done[r].append(p)
    for r in ranks:
        n = len(by_rank[r])
        out.matched[r] += len(done[r])
        if done[r]:
            out.dropped_head[r] += min(done[r])
            out.dropped_tail[r] += n - 1 - max(done[r])
        else:
            out.notes.append(f"group {key}, rank {r}: none of its {n} collectives is on every rank of the group")


def _notes(key: str, ref: int, r: int, al: PairAlignment) -> list[str]:
    out = []
    where = f"group {key}, rank {r} against rank {ref}"
    if al.mismatched:
        out.append(f"{where}: {al.mismatched} collectives inside the overlap differ in op, size or dtype; left out")
    if al.alternative is not None:
        c1, c2 = al.costs
        out.append(f"{where}: shifts {al.shift} and {al.alternative} fit the signatures, and the clocks do not "
                   f"tell them apart (end-time differences {c1:,.0f} vs {c2:,.0f} µs) nor do the profiler step "
                   f"numbers; took {al.shift}, the larger overlap: an ambiguous pairing")
    if al.step_shift is not None:
        out.append(f"{where}: the clocks pair the collectives at shift {al.shift}, the profiler step numbers at "
                   f"{al.step_shift}; took the clocks'")
    return out
