"""Scaling efficiency and the collectives' share (analysis/run/scaling.py), worked on paper."""

from __future__ import annotations

import pytest

from trainprof.analysis.run.scaling import efficiency, job_comm, rank_comm, scaling_rows, union_us
from trainprof.recordtypes.collectives import RankCollectives


def test_union_counts_overlapping_collectives_once():
    # [0,10] ∪ [5,12] ∪ [20,25] = 12 + 5
    assert union_us([5, 0, 20], [12, 10, 25]) == 17
    assert union_us([], []) == 0


def test_rank_share_of_two_profiled_steps():
    # two steps of 100 µs; per step a 20 µs all-reduce half hidden under compute and a 10 µs one
    # not hidden: comm 60/200 = 30%, exposed (10 + 10) × 2 / 200 = 20%; 4 MB all-reduced per step
    c = RankCollectives(source="gloo", count=4, kept=4, op=["all_reduce"] * 4, group=["default"] * 4, seq=[0, 1, 2, 3],
                        bytes=[4e6, None, 4e6, None], start_us=[0, 50, 100, 150], end_us=[20, 60, 120, 160],
                        compute_overlap_pct=[50.0, 0.0, 50.0, 0.0], step=[1, 1, 2, 2], step_number=[1, 2],
                        step_cpu_start_us=[0, 100])
    r = rank_comm(c, 100.0)
    assert r["comm_share"] == pytest.approx(0.30) and r["exposed_share"] == pytest.approx(0.20)
    assert r["collectives_per_step"] == 2 and r["allreduce_bytes_per_step"] == 4e6
    assert rank_comm(None, 100.0) is None and rank_comm(c, None) is None
    other = {**r, "comm_share": 0.5, "exposed_share": 0.4}
    j = job_comm([r, other, None])
    assert j["comm_share"] == pytest.approx(0.40) and j["exposed_share"] == pytest.approx(0.30) and j["ranks_profiled"] == 2


def test_two_collectives_at_once_expose_their_union_not_their_sum():
    # gloo ran [0,30] and [10,40] at once, neither hidden: 40 µs of the 100 µs step are exposed, not
    # 60 (the plain sum, above the union: bench scaling once read exposed 0.405 > comm 0.393)
    c = RankCollectives(source="gloo", count=2, kept=2, op=["all_reduce"] * 2, group=["default"] * 2, seq=[0, 1],
                        bytes=[None, None], start_us=[0, 10], end_us=[30, 40], compute_overlap_pct=[0.0, 0.0],
                        step=[1, 1], step_number=[1], step_cpu_start_us=[0])
    r = rank_comm(c, 100.0)
    assert r["comm_share"] == pytest.approx(0.40) and r["exposed_share"] == pytest.approx(0.40)
    assert r["exposed_share"] <= r["comm_share"]


def test_efficiency_and_what_the_collectives_explain():
    # one rank: 1000 tokens/s at 100 ms a step; two ranks: 1600 tokens/s (800 each) at 125 ms,
    # 20% of it exposed collectives = 25 ms of the 25 ms lost: 100% explained; efficiency 0.8
    rows = scaling_rows([{"nproc": 1, "job_tokens_per_s": 1000.0, "step_time_s": 0.100, "exposed_share": 0.0},
                         {"nproc": 2, "job_tokens_per_s": 1600.0, "step_time_s": 0.125, "exposed_share": 0.2}])
    assert [r["efficiency"] for r in rows] == [1.0, pytest.approx(0.8)]
    assert rows[1]["lost_s"] == pytest.approx(0.025) and rows[1]["explained_by_comm"] == pytest.approx(1.0)
    assert rows[0]["explained_by_comm"] is None  # nothing lost
    assert efficiency(1.0, 2, 0.0) is None
