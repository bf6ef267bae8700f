"""Waits at the collectives (analysis/job/collectives_waits.py), worked by hand."""

from trainprof.analysis.job.collectives_waits import attribute, collective_waits, first_collectives
from trainprof.recordtypes.collectives import RankCollectives


def test_attribute_splits_a_union_between_culprits():
    # Rank r waits [0, 10] for rank 1 and [5, 30] for rank 2 (two streams overlap):
    # union 30. [0, 5] only rank 1's wait covers -> 1; [5, 10] both, the one ending later
    # (rank 2's, at 30) holds r there -> 2; [10, 30] -> 2. Rank 1: 5, rank 2: 25.
    assert attribute([(0, 10, 1, 0), (5, 30, 2, 1)]) == {1: 5.0, 2: 25.0}
    # a wait nested in another adds nothing; disjoint ones add up
    assert attribute([(0, 30, 1, 0), (5, 10, 2, 1), (40, 45, 2, 2)]) == {1: 30.0, 2: 5.0}
    assert attribute([]) == {}


def test_overlapping_collectives_on_two_streams_never_wait_longer_than_the_span():
    # Rank 0 runs two collectives on two streams at the same time, [0, 100] and [10, 100];
    # rank 1 arrives at both at 90 (ends agree). Summed, rank 0 "waited" 90 + 80 = 170 µs in
    # a 100 µs window; the union of [0, 90] and [10, 90] is 90.
    arrive = {0: [0.0, 10.0], 1: [90.0, 90.0]}
    end = {0: [100.0, 100.0], 1: [100.0, 100.0]}
    w = collective_waits([{0: 0, 1: 0}, {0: 1, 1: 1}], arrive, end, {})
    assert w.wait_us == {0: 90.0, 1: 0.0} and w.span_us == {0: 100.0, 1: 10.0}
    # caused: the sum of the others' waits where rank 1 came last: 90 + 80
    assert w.caused_us[1] == 170.0 and w.last_count == {0: 0, 1: 2}
    assert w.attributed == {0: {1: 90.0}, 1: {}}


def test_a_wait_longer_than_the_rank_own_collective_is_clipped_and_counted():
    # Rank 0's kernel is [0, 50]; rank 1 arrives at 80 (after rank 0 finished: impossible
    # on right clocks). Rank 0's wait is clipped to its 50 µs kernel; excess 30 µs.
    w = collective_waits([{0: 0, 1: 0}], {0: [0.0], 1: [80.0]}, {0: [50.0], 1: [100.0]}, {})
    assert (w.wait_us[0], w.clipped, w.clipped_max_us) == (50.0, 1, 30.0)


def test_caused_waits_at_the_first_collective_of_a_step():
    # Rank 1 is last at the first collective of its step 7 (rank 0 waits 40) and at the
    # second of step 7 (rank 0 waits 10): 40 of its 50 µs caused are at step openings.
    block1 = RankCollectives(source="nccl", count=2, kept=2, op=["all_reduce"] * 2, group=["0"] * 2, seq=[0, 1],
                             bytes=[None] * 2, start_us=[100.0, 200.0], end_us=[150.0, 250.0], step=[7, 7])
    first = {1: first_collectives(block1, {0, 1})}
    assert first == {1: {0}}
    w = collective_waits([{0: 0, 1: 0}, {0: 1, 1: 1}], {0: [60.0, 190.0], 1: [100.0, 200.0]},
                         {0: [150.0, 250.0], 1: [150.0, 250.0]}, first)
    assert (w.caused_us[1], w.first_caused_us[1]) == (50.0, 40.0)
