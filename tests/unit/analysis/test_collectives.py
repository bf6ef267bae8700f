"""Collectives matched across ranks: arithmetic worked on paper, then the shipped NCCL traces."""

from pathlib import Path

import msgspec
import pytest

from trainprof.analysis.job.busbw import bus_factor
from trainprof.analysis.job import collectives, collectives_job
from trainprof.analysis.job.collectives import canonical_op, message_bytes
from trainprof.analysis.timeline.context import Context
from trainprof.diagnose.job_rules import JobThresholds, diagnose_collectives
from trainprof.recordtypes.collectives import JobCollectives
from trainprof.recordtypes.finding import Finding
from trainprof.trace import read_trace

from tests.plain import plain

REAL = Path(__file__).parents[2] / "data" / "traces" / "real"


def block(starts, ends, op="all_reduce", nbytes=None, steps=(), step_starts=(), group_size=None, step=None):
    """A rank's collectives block (analysis/job/collectives.py); `step`: the profiler step of each
    instance's launch, `steps`/`step_starts`: the host's step entries."""
    n = len(starts)
    return {"source": "nccl", "count": n, "kept": n,
            "op": [op] * n, "group": ["0"] * n, "seq": list(range(n)), "bytes": [nbytes] * n,
            "start_us": list(starts), "end_us": list(ends), "step_number": list(steps),
            "step_cpu_start_us": list(step_starts), "group_size": {"0": group_size} if group_size else {},
            "step": list(step) if step is not None else [None] * n}


def rank_collectives(ctx):
    return plain(collectives.rank_collectives(ctx))


def job_collectives(blocks):  # the record as written, to check many fields at once
    return plain(collectives_job.job_collectives(blocks))


def match(blocks):
    rows, waits, offsets = collectives_job.match(blocks)
    return plain(rows), waits, offsets


@pytest.mark.parametrize("name, op", [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "all_reduce"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "all_gather"),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "reduce_scatter"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "send_recv"),
    ("ncclDevKernel_Broadcast_RING_LL", "broadcast"),
    ("gloo:all_reduce", "all_reduce"), ("_allgather_base", "all_gather"), ("all_to_all", "all_to_all"),
    ("allreduce", "all_reduce"), ("reduce_scatter_tensor_coalesced", "reduce_scatter"),
])
def test_canonical_op(name, op):
    assert canonical_op(name) == op


def test_message_bytes_follow_nccl_tests_S():
    # all_gather: S is the gathered output (out nelems); the others: the input
    assert message_bytes("all_gather", 10, 40, 2) == 80
    assert message_bytes("all_reduce", 10, 10, 4) == 40
    assert message_bytes("all_reduce", -1, -1, 4) is None


def test_two_ranks_by_hand():
    # Rank 1's clock runs 1000 µs ahead. Collective k: rank 0 arrives at 0 / 100, rank 1
    # (on rank 0's clock) at 50 / 300; both end at 200 / 400 (rank 1 writes 1200 / 1400).
    # offsets: ends differ by 1000 both times -> rank 1 offset 1000.
    # k=0: arrivals 0, 50 -> skew 50, rank 0 waits 50, last = rank 1; latency min(200, 150) = 150
    # k=1: arrivals 100, 300 -> skew 200, rank 0 waits 200, last = rank 1; latency min(300, 100) = 100
    # bytes 1e8 over 100 µs -> algbw 1000 GB/s; all_reduce on 2 ranks: factor 2·1/2 = 1
    # (same signatures, so the shift is the clocks' choice: shift 0 has end differences
    # 1000, 1000, shift +1 has one of 800 — within 2× of each other, an ambiguous pair of
    # costs, so the larger overlap, shift 0, is taken; the rank's waits are [0, 50] and
    # [100, 300], disjoint: 250; the span is 0..400)
    b0 = block([0, 100], [200, 400], nbytes=10**8)
    b1 = block([1050, 1300], [1200, 1400], nbytes=10**8)
    job = job_collectives({0: b0, 1: b1})
    r0, r1 = job["per_rank"]
    assert r1["clock_offset_us"] == 1000
    assert (r0["wait_us"], r1["wait_us"]) == (250, 0)
    assert (r1["caused_wait_us"], r1["last_count"], r1["caused_share_pct"]) == (250, 2, 100.0)
    rows, _, _ = match({0: b0, 1: b1})
    assert [(x["skew_us"], x["latency_us"], x["last_rank"]) for x in rows] == [(50, 150, 1), (200, 100, 1)]
    assert rows[1]["busbw_gbs"] == pytest.approx(1000.0)
    assert job["groups"][0]["count"] == 2 and job["consistent"]
    assert job["span_us"] == 400 and job["alignment"] == {"overlap": 1}
    assert job["per_rank"][0]["span_us"] == 400 and r1["span_us"] == 400 - 50


def test_busbw_uses_the_recorded_group_size():
    # 2 sampled ranks of an 8-rank group: the factor is 2·7/8, not 2·1/2
    b0 = block([0], [100], nbytes=10**8, group_size=8)
    b1 = block([0], [100], nbytes=10**8, group_size=8)
    row = match({0: b0, 1: b1})[0][0]
    assert row["busbw_gbs"] == pytest.approx(1000.0 * bus_factor("all_reduce", 8))
    assert job_collectives({0: b0, 1: b1})["world_size"] == 8


def test_unmatched_counts_are_reported():
    job = job_collectives({0: block([0, 10, 20], [5, 15, 25]), 1: block([0, 10], [5, 15])})
    assert job["matched"] == 2 and not job["consistent"] and job["unmatched"] == {"0": 1}


def test_lateness_on_aligned_clocks():
    # Same clock. Steps 1, 2 begin at 0 / 100 on rank 0 and 30 / 160 on rank 1: rank 1 is
    # 30 and 60 µs late -> median 45, max 60.
    b0 = block([10, 110], [200, 300], steps=[1, 2], step_starts=[0, 100])
    b1 = block([40, 170], [200, 300], steps=[1, 2], step_starts=[30, 160])
    late = job_collectives({0: b0, 1: b1})["lateness"]
    assert late["per_rank"][1] == {"rank": 1, "median_late_us": 45.0, "max_late_us": 60.0, "late_us": [30.0, 60.0]}


def test_findings_name_the_straggler_and_move_the_waiting_ranks_symptom_to_it():
    # rank 1 arrives 5 ms late at 10 collectives: last at 100%, the others waited 50 ms
    starts0 = [i * 20_000 for i in range(10)]
    b0 = block(starts0, [s + 8_000 for s in starts0])
    b1 = block([s + 5_000 for s in starts0], [s + 8_000 for s in starts0])
    multi = {"ranks": 2, "collectives": job_collectives({0: b0, 1: b1}), "step_time_us": None}
    # (rank, its communication kernels' µs, its findings being built)
    ranks = [(0, 80_000.0, [Finding(id="exposed_communication", evidence="e", fix="tune DDP buckets",
                                     confidence="medium")]),
             (1, 30_000.0, [])]
    found = diagnose_collectives(ranks, multi, JobThresholds())
    assert [f.id for f in found] == ["stragglers"]
    assert found[0].title.startswith("Rank 1 ")
    # rank 0 waits 5 ms at each of 10 collectives: 50 ms, the mean over the 1 other rank;
    # window 0 .. 180 ms + 8 ms = 188 ms -> gain 50 / 188 = 26.6%
    assert "last to arrive at 10 of 10 matched collectives" in found[0].evidence
    assert "a mean 50.00 ms" in found[0].evidence
    assert found[0].estimated_gain_pct == pytest.approx(100 * 50 / 188, abs=0.01)
    # 50 ms of rank 0's 80 ms of collectives is waiting for rank 1 (62% ≥ 50%): one cause, one
    # finding (issue #39): rank 0's exposed_communication is gone, rank 1's cites it
    assert ranks[0][2] == []
    assert "rank 0: 50.0 ms of exposed communication waiting for it (62%" in found[0].evidence


def test_a_smaller_share_of_waiting_stays_on_the_rank_as_a_note():
    # the same job, rank 0 with 200 ms of collectives: its 50 ms for rank 1 is 25% (< 50%)
    starts0 = [i * 20_000 for i in range(10)]
    b0 = block(starts0, [s + 8_000 for s in starts0])
    b1 = block([s + 5_000 for s in starts0], [s + 8_000 for s in starts0])
    multi = {"ranks": 2, "collectives": job_collectives({0: b0, 1: b1}), "step_time_us": None}
    ranks = [(0, 200_000.0, [Finding(id="exposed_communication", evidence="e", fix="tune DDP buckets")]), (1, 0.0, [])]
    found = diagnose_collectives(ranks, multi, JobThresholds())
    assert ranks[0][2][0].evidence == "e; 50.0 ms of it (25%) is waiting for rank 1 (job findings)"
    assert "shows on the others" not in found[0].evidence


def test_no_straggler_when_arrivals_alternate():
    starts = [i * 1000 for i in range(10)]
    b0 = block([s + (500 if i % 2 else 0) for i, s in enumerate(starts)], [s + 900 for s in starts])
    b1 = block([s + (0 if i % 2 else 500) for i, s in enumerate(starts)], [s + 900 for s in starts])
    multi = {"ranks": 2, "collectives": job_collectives({0: b0, 1: b1})}
    assert diagnose_collectives([], multi) == []


def test_sampled_128_rank_nccl_pair_matches_what_ends_together():
    # Two sampled ranks of a 128-rank recsys job, no collective args: the op comes from the
    # c10d call (the kernels are all ncclKernel_SendRecv). The ranks issue their all_to_alls
    # (uneven, per-rank sizes) and all_reduces in orders that do not correspond; the pairs
    # whose ends are 40-250 ms apart (more than the collective lasts) are left out, the two
    # all_gathers and two all_reduces whose ends agree within 0.4 ms are kept.
    files = sorted((REAL / "hta_recsys_128rank_nccl_a100").glob("*.json.gz"))
    blocks = {i: collectives.rank_collectives(Context.build(read_trace(str(f)))) for i, f in enumerate(files)}
    assert [b.count for b in blocks.values()] == [10, 10]
    assert blocks[0].op[:5] == ["all_to_all", "all_to_all", "all_reduce", "all_reduce", "all_gather"]
    job = job_collectives(blocks)
    assert job["matched"] == 4 and not job["consistent"] and job["world_size"] == 128
    assert {g["op"]: g["count"] for g in job["groups"]} == {"all_gather": 2, "all_reduce": 2}
    assert max(x["end_skew_us"] for x in job["slowest"]) < 400
    assert any("end too far apart" in n and n.startswith("6 ") for n in job["notes"])
    assert [r["last_count"] for r in job["per_rank"]] == [0, 4]


def test_kernel_args_give_group_and_bytes():
    c = rank_collectives(Context.build(read_trace(str(REAL / "hta_ddp_2rank_nccl_a100" / "nccl_data.json.gz"))))
    assert c["source"] == "nccl" and c["count"] == 21 and set(c["group"]) == {"0"}
    # first all_reduce: 2,049,000 float elements = 8,196,000 bytes
    first = c["op"].index("all_reduce")
    assert c["bytes"][first] == 8_196_000
    assert c["group_size"] == {"0": 2}


STEP = {"min": 30_000.0, "median": 30_000.0, "max": 30_000.0}


def test_ranks_late_by_turns_are_not_late_ranks():
    # Two steps of 30 ms, one collective at each step's start. Step 1: rank 1's host and GPU
    # come 5 ms late; step 2: rank 0's. Each caused 5 ms of waits: 50% of the job's waits,
    # below 1.5 × the fair 50% -> jitter, no culprit.
    b0 = block([10, 35_010], [9_000, 39_000], steps=[1, 2], step_starts=[0, 35_000], step=[1, 2])
    b1 = block([5_010, 30_010], [9_000, 39_000], steps=[1, 2], step_starts=[5_000, 30_000], step=[1, 2])
    multi = {"ranks": 2, "collectives": job_collectives({0: b0, 1: b1}), "step_time_us": STEP}
    assert diagnose_collectives([], multi) == []
    assert [r["caused_share_pct"] for r in multi["collectives"]["per_rank"]] == [50.0, 50.0]


def test_a_rank_late_at_every_step_start_is_a_late_rank():
    # rank 1's host enters both steps 5 ms late and its GPU arrives 5 ms late at each step's
    # first collective: all its caused waits (2 × 5 ms) are at the first collective of its
    # steps, and its host is late by 5 ms ≥ max(1 ms, 5% of 30 ms) in 2 of 2 steps -> late_ranks,
    # one finding (not also a straggler). Window 10 .. 39,000 µs: gain 10 ms / 38.99 ms.
    b0 = block([10, 30_010], [9_000, 39_000], steps=[1, 2], step_starts=[0, 30_000], step=[1, 2])
    b1 = block([5_010, 35_010], [9_000, 39_000], steps=[1, 2], step_starts=[5_000, 35_000], step=[1, 2])
    found = diagnose_collectives([], {"ranks": 2, "collectives": job_collectives({0: b0, 1: b1}),
                                      "step_time_us": STEP})
    assert [(f.id, f.title.split()[1]) for f in found] == [("late_ranks", "1")]
    assert "100% of those waits at the first collective" in found[0].evidence
    assert "a median 5.00 ms" in found[0].evidence
    assert found[0].estimated_gain_pct == pytest.approx(100 * 10_000 / 38_990, abs=0.01)


def test_a_host_that_runs_late_while_its_gpu_is_on_time_is_not_named():
    # CPU run-ahead: rank 1's host enters both steps 20 ms after rank 0's, but its GPU
    # arrives at the collectives with rank 0's (within 3 µs): nobody waited, nobody is named;
    # the host figure stays in the record as information.
    b0 = block([10, 30_010], [9_000, 39_000], steps=[1, 2], step_starts=[0, 30_000], step=[1, 2])
    b1 = block([13, 30_012], [9_000, 39_000], steps=[1, 2], step_starts=[20_000, 50_000], step=[1, 2])
    multi = {"ranks": 2, "collectives": job_collectives({0: b0, 1: b1}), "step_time_us": STEP}
    assert diagnose_collectives([], multi) == []
    late = multi["collectives"]["lateness"]["per_rank"][1]
    assert late["median_late_us"] == 20_000.0


def _ctx(tmp_path, events) -> Context:
    import json

    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": events}))
    return Context.build(read_trace(str(p)))


def _k(name, ts, dur, stream, corr):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": stream,
            "args": {"stream": stream, "device": 0, "correlation": corr}}


def test_overlap_with_compute_per_nccl_collective(tmp_path):
    # Stream 7 computes [0, 100] and [150, 200]; stream 13 runs two all_reduces:
    #   [50, 150]: compute covers [50, 100] -> 50 of 100 µs = 50%
    #   [210, 260]: nothing computes -> 0%
    # The memcpy on stream 7 at [100, 150] is not compute (HTA's non-compute classes).
    ctx = _ctx(tmp_path, [
        _k("ampere_sgemm_128x64_nn", 0, 100, 7, 1),
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "ts": 100, "dur": 50,
         "pid": 0, "tid": 7, "args": {"stream": 7, "device": 0, "correlation": 2}},
        _k("ampere_sgemm_128x64_nn", 150, 50, 7, 3),
        _k("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 100, 13, 4),
        _k("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 210, 50, 13, 5),
    ])
    c = rank_collectives(ctx)
    assert c["source"] == "nccl" and c["compute_overlap_pct"] == [50.0, 0.0]


def test_overlap_with_compute_per_gloo_collective(tmp_path):
    # Main thread (tid 1) issues all_reduce at 0 (c10d::allreduce_ [0, 5]), then computes
    # aten::mm [10, 40] and waits (aten::wait... not compute) [40, 100]; gloo's worker (tid 9)
    # runs gloo:all_reduce [2, 100] with an aten::add_ of its own [20, 30] (not compute beside
    # it: same thread). The collective spans [0, 100] (arrival = the c10d call):
    # compute = aten::mm [10, 40] = 30 of 100 µs = 30%.
    def op(name, ts, dur, tid):
        return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid, "args": {}}

    ctx = _ctx(tmp_path, [
        op("c10d::allreduce_", 0, 5, 1), op("aten::mm", 10, 30, 1), op("c10d::wait", 40, 60, 1),
        {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "ts": 2, "dur": 98, "pid": 1, "tid": 9,
         "args": {}},
        op("aten::add_", 20, 10, 9),
    ])
    c = rank_collectives(ctx)
    assert c["source"] == "gloo" and c["compute_overlap_pct"] == [30.0]


def test_job_overlap_is_the_median_over_ranks_and_old_blocks_still_match():
    # per collective: ranks at 10% and 30% -> median 20%; a block without the column
    # (written before it existed) contributes nothing
    b0 = {**block([0, 100], [50, 150]), "compute_overlap_pct": [10.0, 0.0]}
    b1 = {**block([0, 100], [50, 150]), "compute_overlap_pct": [30.0, None]}
    rows, _, _ = match({0: b0, 1: b1})
    assert [x["compute_overlap_pct"] for x in rows] == [20.0, 0.0]
    job = job_collectives({0: b0, 1: b1, 2: block([0, 100], [50, 150])})
    assert job["groups"][0]["median_compute_overlap_pct"] == 10.0  # median of 20 and 0
    assert job_collectives({0: block([0], [5]), 1: block([0], [5])})["groups"][0][
        "median_compute_overlap_pct"] is None


def test_aggregate_busbw_is_total_bytes_over_total_latency():
    # two all_reduces of 1e8 bytes on 2 ranks (factor 1): latencies 100 and 300 µs.
    # per collective busbw 1000 and 333.3 GB/s -> median 666.7; aggregate 2e8 B / 400 µs = 500 GB/s
    b0 = block([0, 1000], [100, 1300], nbytes=10**8)
    b1 = block([0, 1000], [100, 1300], nbytes=10**8)
    g = job_collectives({0: b0, 1: b1})["groups"][0]
    assert g["median_busbw_gbs"] == pytest.approx(666.667, rel=1e-4)
    assert g["aggregate_busbw_gbs"] == pytest.approx(500.0)
    assert job_collectives({0: block([0], [5]), 1: block([0], [5])})["groups"][0]["aggregate_busbw_gbs"] is None


def test_the_compute_straggler_guess_needs_others_to_have_waited():
    from trainprof.analysis.job.multirank import multi_rank, reconcile_stragglers

    def row(rank, compute, comm):
        return {"rank": rank, "step_time_us": 100.0, "compute_us": compute, "communication_us": comm, "idle_us": 0.0}

    # no rank communicates (a folder of unrelated traces): nobody waited for anybody
    assert multi_rank([row(0, 50.0, 0.0), row(1, 80.0, 0.0)]).stragglers == []
    # rank 1 computes (80 − 65) / 65 = 23% more than the median and spends less in
    # collectives (10 vs the median 20): the others waited for it
    multi = multi_rank([row(0, 50.0, 30.0), row(1, 80.0, 10.0)])
    assert [s.rank for s in multi.stragglers] == [1]
    # ... unless the matched collectives say rank 1 was never the last to arrive
    job = msgspec.convert({"ranks": 2, "matched": 3, "consistent": True, "total_wait_us": 900.0, "notes": [],
                           "groups": [], "slowest": [], "per_rank": [
        {"rank": r, "collectives": 3, "wait_us": 0.0, "caused_wait_us": caused, "last_count": last,
         "caused_share_pct": 0.0, "clock_offset_us": 0.0} for r, last, caused in ((0, 3, 900.0), (1, 0, 0.0))]},
        JobCollectives)
    kept, job = reconcile_stragglers(multi.stragglers, job)
    assert kept == [] and "rank 1 dropped" in job.notes[0]
