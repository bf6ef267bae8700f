"""Collectives matched by content (analysis/job/collectives_align.py): by hand, then Hypothesis."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from trainprof.analysis.job.collectives_align import Side, align_pair, match
from trainprof.recordtypes.collectives import RankCollectives


def side(sig, end, step=None, seq=None) -> Side:
    f = (lambda x: None if x is None else np.asarray(x, dtype=float))
    return Side(np.asarray(sig, dtype=np.int64), np.asarray(end, dtype=float), f(step),
                None if seq is None else np.asarray(seq, dtype=np.int64))


def block(ops, ends, sizes=None, group="0", step=None, starts=None) -> RankCollectives:
    n = len(ops)
    return RankCollectives(source="nccl", count=n, kept=n, **{
            "op": list(ops), "group": [group] * n, "seq": list(range(n)), "bytes": [None] * n,
            "nelems": list(sizes) if sizes else [None] * n, "dtype": [None] * n,
            "start_us": list(starts) if starts else [e - 5 for e in ends], "end_us": list(ends),
            "step": list(step) if step else [None] * n})


def test_edge_drops_found_by_the_signatures():
    # reference: A B C D E (all different); rank b's window lost A and B and has one more, F:
    # b = C D E F. Shift 2 pairs C..E (3 of the shorter 4: overlap ≥ 2), no mismatch; any
    # other shift with overlap ≥ 2 mismatches. F has no partner.
    a = side([0, 1, 2, 3, 4], [10, 20, 30, 40, 50])
    b = side([2, 3, 4, 5], [30, 40, 50, 60])
    al = align_pair(a, b)
    assert (al.shift, al.pairs, al.mismatched, al.by) == (2, [(2, 0), (3, 1), (4, 2)], 0, "signature")


def test_a_periodic_window_shifted_by_a_period_is_told_by_the_clock():
    # Two iterations of (X Y Y) each on both ranks, rank b one iteration later: its 3 first
    # are the reference's last 3. Signatures fit shifts 0 and 3 alike. Ends on one clock,
    # an iteration lasts 100 µs: shift 3 ends agree (differences 0) and shift 0 is off by a
    # whole iteration (100): the clock is clear (100 ≥ 2 × 0).
    a = side([0, 1, 1, 0, 1, 1], [10, 20, 30, 110, 120, 130])
    b = side([0, 1, 1, 0, 1, 1], [110, 120, 130, 210, 220, 230])
    al = align_pair(a, b)
    assert (al.shift, al.by, al.alternative) == (3, "clock", None)
    assert al.pairs == [(3, 0), (4, 1), (5, 2)]


def test_clocks_too_far_apart_leave_it_to_the_step_numbers():
    # Same as above, but rank b's clock is 160 µs ahead: shift 3's end differences are 160,
    # shift 0's 260 (within 2× of each other: the clocks cannot tell). The profiler step
    # numbers can: shift 3 pairs steps 2 with 2.
    a = side([0, 1, 1, 0, 1, 1], [10, 20, 30, 110, 120, 130], step=[1, 1, 1, 2, 2, 2])
    b = side([0, 1, 1, 0, 1, 1], [270, 280, 290, 370, 380, 390], step=[2, 2, 2, 3, 3, 3])
    al = align_pair(a, b)
    assert (al.shift, al.by) == (3, "step")
    # without step numbers: the larger overlap (shift 0), said to be ambiguous
    al = align_pair(side(a.sig, a.end), side(b.sig, b.end))
    assert (al.shift, al.by, al.alternative) == (0, "overlap", 3)
    assert al.costs == (160.0, 260.0)


def test_a_recorded_sequence_number_pairs_directly():
    # The signatures are all alike and the clocks 1 s apart: only Seq can pair these.
    # b's Seq 7, 8 are the reference's positions 2, 3.
    a = side([0, 0, 0, 0], [0, 10, 20, 30], seq=[5, 6, 7, 8])
    b = side([0, 0], [1e6 + 20, 1e6 + 30], seq=[7, 8])
    al = align_pair(a, b)
    assert (al.pairs, al.by) == ([(2, 0), (3, 1)], "seq")


def test_seq_missing_at_a_window_edge_still_pairs_by_seq_and_inside_falls_back():
    # All alike, clocks 1 s apart. Rank 1's first kernel has no Seq (its launch fell before
    # the window opened): left unpaired, the rest pair by Seq: its Seq 6, 7 are rank 0's
    # positions 1, 2 (rank 0: Seq 5, 6, 7). A Seq missing between two recorded ones is no
    # window edge: the group falls back to the signatures.
    ops = ["all_reduce"] * 3
    b0 = replace(block(ops, [10, 20, 30]), seq_id=[5, 6, 7])
    b1 = replace(block(ops, [1e6 + 10, 1e6 + 20, 1e6 + 30]), seq_id=[None, 6, 7])
    ends = {r: np.array(b.end_us, float) for r, b in ((0, b0), (1, b1))}
    m = match({0: b0, 1: b1}, ends)
    assert m.by == {"seq": 1} and sorted(c[0] for _, _, c in m.collectives) == [1, 2]
    assert m.dropped_head == {0: 1, 1: 1}
    b1 = replace(b1, seq_id=[5, None, 7])
    assert "seq" not in match({0: b0, 1: b1}, ends).by


def test_a_mismatch_inside_the_overlap_is_left_out_and_counted():
    # b differs from a at position 2 only: shift 0 has 1 mismatch in 5 (the fewest); the
    # other 4 positions pair.
    al = align_pair(side([0, 1, 2, 3, 4], [1, 2, 3, 4, 5]), side([0, 1, 9, 3, 4], [1, 2, 3, 4, 5]))
    assert (al.shift, al.mismatched) == (0, 1) and [i for i, _ in al.pairs] == [0, 1, 3, 4]


def test_without_a_recorded_group_each_op_is_aligned_on_its_own():
    # Two unrecorded groups interleave differently on the two ranks (all_reduce and
    # all_to_all issued from different threads), each op in the same order: matched per op.
    b0 = block(["all_reduce", "all_to_all", "all_reduce", "all_to_all"], [10, 20, 30, 40], group="default")
    b1 = block(["all_to_all", "all_reduce", "all_to_all", "all_reduce"], [20, 10, 40, 30], group="default")
    m = match({0: b0, 1: b1}, {0: np.array(b0.end_us, float), 1: np.array(b1.end_us, float)})
    pairs = sorted((c[0], c[1]) for _, _, c in m.collectives)
    assert pairs == [(0, 1), (1, 0), (2, 3), (3, 2)] and m.matched == {0: 4, 1: 4}


def test_a_collective_missing_from_one_rank_is_dropped_for_all_and_counted():
    # 3 ranks; rank 2's window lost the first collective: it is complete on no rank, so it is
    # dropped at the head of ranks 0 and 1 (and never paired among them alone).
    ops = ["all_reduce", "broadcast", "all_gather", "all_reduce"]
    ends = [10, 20, 30, 40]
    blocks = {0: block(ops, ends), 1: block(ops, ends), 2: block(ops[1:], ends[1:])}
    m = match(blocks, {r: np.array(b.end_us, float) for r, b in blocks.items()})
    assert len(m.collectives) == 3
    assert m.dropped_head == {0: 1, 1: 1, 2: 0} and m.dropped_tail == {0: 0, 1: 0, 2: 0}


# ---- Hypothesis: random windows onto one sequence recover the true shift -----------------

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 5), min_size=8, max_size=60), st.data())
def test_random_sequences_with_random_edge_drops(seq, data):
    # A common sequence; each rank sees a window of it (random drops at both ends, each
    # window keeping more than half of it, so the overlap is at least half the shorter). The
    # ends of instance i are at 100·i on both ranks (one clock). Truth: b's j-th is the
    # common (lo_b + j)-th, so the shift is lo_b − lo_a.
    n = len(seq)
    lo_a = data.draw(st.integers(0, n // 4))
    hi_a = data.draw(st.integers(n - n // 4, n))
    lo_b = data.draw(st.integers(0, n // 4))
    hi_b = data.draw(st.integers(n - n // 4, n))
    t = np.arange(n, dtype=float) * 100.0
    a = side(seq[lo_a:hi_a], t[lo_a:hi_a])
    b = side(seq[lo_b:hi_b], t[lo_b:hi_b])
    al = align_pair(a, b)
    assert al.shift == lo_b - lo_a
    assert al.mismatched == 0
    assert all(i + lo_a == j + lo_b for i, j in al.pairs)
    assert len(al.pairs) == min(hi_a, hi_b) - max(lo_a, lo_b)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 3), min_size=1, max_size=6), st.integers(1, 2), st.integers(0, 3),
       st.floats(-30.0, 30.0))
def test_periodic_windows_shifted_by_whole_periods(period, k, more, offset_us):
    # An iteration (`period` signatures) repeated `reps` times per window; rank b's window
    # starts k iterations later and ends k later (reps ≥ 2k: the windows overlap in at least
    # half, the aligner's scope). Ends 100 µs apart, iterations 10 ms apart, b's clock off by
    # at most 30 µs: the true shift k·len(period) costs ≤ 30 µs, any other ≥ 70 (a neighbour
    # with the same signature, 100 µs away): more than 2× — the clocks pick the true shift.
    # (Closer neighbours than 2× the clock error are the documented limit.)
    p, reps = len(period), 2 * k + more
    common = period * (reps + k)
    t = np.array([10_000.0 * (i // p) + 100.0 * (i % p) for i in range(len(common))])
    a = side(common[:reps * p], t[:reps * p])
    b = side(common[k * p:], t[k * p:] + offset_us)
    al = align_pair(a, b)
    assert al.shift == k * p
    assert al.by in ("signature", "clock")
