"""Planted truths for the job analysis (issue #28): real NCCL ranks copied into a job and edited
to a known answer (tests/integration/planted_job.py). The right answer is known before the
code runs; each test fails on positional matching or on host step-entry lateness.

Base: the A100 DDP rank of HTA's nccl_parser_config (3 profiler steps of ~220 ms, each
2 broadcasts + 5 all_reduces, 21 collectives), copied into 3 ranks (a culprit and two
others); `jitter` makes each rank arrive 0–4 µs late at each collective (every rank is
last somewhere, by µs).
"""

from __future__ import annotations

import pytest

import planted_job as pj
from tests.plain import plain
from trainprof.diagnose.job_invariants import check_job_invariants
from trainprof.diagnose.job_rules import diagnose_collectives
from trainprof.recordtypes.analysis import JobCollectives
from trainprof.recordtypes.base import as_struct

STEP = {"min": 220_000.0, "median": 220_000.0, "max": 220_000.0}  # the trace's ~220 ms steps


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("TRAINPROF_STRICT_INVARIANTS", "1")  # a broken claim raises


@pytest.fixture(scope="module")
def a100():
    return pj.load(pj.NCCL_A100)


def _findings(job: dict) -> list[tuple[str, int]]:
    found = diagnose_collectives([], {"ranks": job["ranks"], "collectives": job, "step_time_us": STEP})
    assert not check_job_invariants(as_struct(job, JobCollectives),
                                    [(int(f.title.split()[1]), f.estimated_gain_pct) for f in found])
    return [(f.id, int(f.title.split()[1])) for f in found]


def test_a_window_that_begins_later_makes_nobody_late(a100, tmp_path):
    # Rank 2's profiler opened after the first 2 collectives. Positional matching paired
    # each rank's k-th with rank 2's (k+2)-th and "waited" 883 ms in a 530 ms window.
    docs = pj.copies(a100, 3)
    pj.jitter(docs)
    pj.cut(docs[2], start=pj.nccl(docs[2])[2]["ts"] - 1)
    job = pj.job(docs, tmp_path)
    assert job["matched"] == 19
    assert [(r["dropped_head"], r["dropped_tail"]) for r in job["per_rank"]] == [(2, 0), (2, 0), (0, 0)]
    assert any(n.startswith("rank 0, 1: 2 collectives at the start") for n in job["notes"])
    # 19 collectives × at most 4 µs of jitter each
    assert max(r["wait_us"] for r in job["per_rank"]) <= 19 * 4
    assert _findings(job) == []


def test_a_delayed_rank_and_only_it_is_named_with_its_delay(a100, tmp_path):
    # Rank 1's GPU reaches collective 10 (an all_reduce of step 5) 20 ms late; the others'
    # all_reduce kernels spin 20 ms longer. Each other rank waited 20 ms for rank 1 (+ µs of
    # jitter): others_wait = 20 ms within 10%; gain = 20 ms / the window.
    delta = 20_000.0
    docs = pj.copies(a100, 3)
    pj.jitter(docs)
    pj.delay(docs, 1, 10, delta)
    job = pj.job(docs, tmp_path)
    assert _findings(job) == [("stragglers", 1)]
    r1 = job["per_rank"][1]
    assert r1["others_wait_us"] == pytest.approx(delta, rel=0.10)
    assert r1["gain_pct"] == pytest.approx(100 * delta / job["span_us"], rel=0.10)
    assert [round(r["wait_us"] / delta, 2) for r in job["per_rank"]] == [1.0, 0.0, 1.0]
    assert r1["gain_pct"] <= job["wait_bound_pct"] + 1e-9


def test_a_delay_on_the_mi300_ranks_too(tmp_path):
    # MI300X ResNet DDP (RCCL kernels, 5 of them before the window's first step without
    # args): rank 2 of 3 reaches all_reduce 12 (step 16's second) 3 ms late.
    docs = pj.copies(pj.load(pj.MI300), 3)
    pj.jitter(docs)
    pj.delay(docs, 2, 12, 3_000.0)
    job = pj.job(docs, tmp_path)
    assert _findings(job) == [("stragglers", 2)]
    assert job["per_rank"][2]["others_wait_us"] == pytest.approx(3_000.0, rel=0.10)


def test_an_offset_clock_is_found(a100, tmp_path):
    # Rank 2's whole trace (host and GPU) is 50 ms late on the clock (a quarter of a step:
    # the clocks still tell the iterations apart). Found within 5%; nobody waits for it.
    docs = pj.copies(a100, 3)
    pj.jitter(docs)
    pj.shift(docs[2], 50_000.0)
    job = pj.job(docs, tmp_path)
    assert job["per_rank"][2]["clock_offset_us"] == pytest.approx(50_000.0, rel=0.05)
    assert [r["clock_offset_us"] for r in job["per_rank"][:2]] == [0.0, 0.0]
    assert _findings(job) == []


def test_a_recorded_clock_base_is_used(a100, tmp_path):
    # Rank 1 wrote its times against a baseTimeNanoseconds 2 s later (ts 2 s smaller): on
    # one clock nothing moved, so its offset is −2 s on its raw times and nobody waits.
    docs = pj.copies(a100, 2)
    docs[1]["baseTimeNanoseconds"] += 2_000_000_000
    pj.shift(docs[1], -2_000_000.0)
    job = pj.job(docs, tmp_path)
    assert job["per_rank"][1]["clock_offset_us"] == pytest.approx(-2_000_000.0, abs=1.0)
    assert job["matched"] == 21 and max(r["wait_us"] for r in job["per_rank"]) < 1.0


def test_a_periodic_window_shifted_by_an_iteration(a100, tmp_path):
    # Rank 0 profiled steps 4–5, rank 1 steps 5–6 (same 7 collectives per step; windows cut
    # at the host's step boundaries): signatures fit shifts 0 and 7 alike; the clocks pick 7
    # (step 5 with step 5). Positional matching paired step 4 with step 5 and named rank 0
    # "late" by 100% of the step.
    docs = pj.copies(a100, 2)
    step = pj.steps(a100)
    pj.cut(docs[0], end=step[2]["ts"] - 1)
    pj.cut(docs[1], start=step[1]["ts"] - 1)
    job = pj.job(docs, tmp_path)
    assert job["matched"] == 7 and job["alignment"] == {"clock": 1}
    assert [(r["dropped_head"], r["dropped_tail"]) for r in job["per_rank"]] == [(7, 0), (0, 7)]
    assert max(r["wait_us"] for r in job["per_rank"]) < 1.0
    assert _findings(job) == []
    # the same with rank 1's clock 110 ms (half a step) early: shift 7's ends differ by
    # −110 ms, shift 0's by 220 − 110: the clocks cannot tell the shifts apart any more; the
    # profiler step numbers (5 with 5) do
    pj.shift(docs[1], -110_000.0)
    job = pj.job(docs, tmp_path / "offset")
    assert job["matched"] == 7 and job["alignment"] == {"step": 1}
    assert job["per_rank"][1]["clock_offset_us"] == pytest.approx(-110_000.0, rel=0.05)


def _ambiguous(a100, on: str) -> list[dict]:
    """3 ranks whose collectives nothing but a recorded number can pair: every collective the
    same signature (an all_reduce of 1,000 floats: every shift fits), no ProfilerStep
    annotations (no step numbers to pair by), ranks 0 and 1 profiling steps 1–2 and rank 2
    steps 2–3 (its window opens one step, 7 collectives, later), and rank 2's clock 110 ms
    (half a ~220 ms step) early, so that pairing its step 2 with the others' step 1 is as
    near on the clocks as the right pairing (both 110 ms off) and holds more collectives."""
    docs = pj.copies(a100, 3)
    pj.jitter(docs)
    for d in docs:
        pj.alike(d)
        pj.number(d, 41, on=on)
    # the 8th collective opens step 2 (3 steps of 2 broadcasts + 5 all_reduces)
    for d in docs[:2]:
        pj.cut(d, end=pj.steps(d)[2]["ts"])
    pj.cut(docs[2], start=pj.steps(docs[2])[1]["ts"])
    pj.shift(docs[2], -110_000.0)
    for d in docs:
        pj.drop_steps(d)
    return docs


@pytest.mark.parametrize("on", ["kernel", "op"])
def test_recorded_sequence_numbers_pair_what_nothing_else_can(a100, tmp_path, on):
    # Planted truth. PyTorch numbers a group's collectives: collective k (0-based, of the 21)
    # is Seq 41 + k on every rank, on the kernel's args (recent Kineto) or on its
    # record_param_comms op (where PyTorch writes it). Ranks 0 and 1 hold collectives 0–13
    # (steps 1–2), rank 2 holds 7–20 (steps 2–3): the right pairing is rank 2's j-th with
    # the others' (j + 7)-th, the 7 collectives of step 2, Seq 48–54.
    docs = _ambiguous(a100, on)
    blocks = pj.blocks(docs, tmp_path)
    seq2 = [s for s in blocks[2].seq_id if s is not None]
    assert seq2[:1] == [48] and max(blocks[0].seq_id) <= 54
    job = plain(pj.job_collectives(blocks))
    # the 2 rank pairs of group "0" aligned by Seq; 7 collectives complete on every rank
    assert job["alignment"] == {"seq": 2} and job["matched"] == 7
    # ranks 0, 1: their first 7 (step 1) dropped at the head; rank 2: its last 7 (step 3)
    # at the tail, plus any kernel of step 1 that ran inside its window (its launch, and
    # the op that carried Seq, fell before the window opened)
    heads = [r["dropped_head"] for r in job["per_rank"]]
    assert heads[:2] == [7, 7] and [r["dropped_tail"] for r in job["per_rank"]] == [0, 0, 7]
    assert heads[2] == blocks[2].count - 14
    assert job["per_rank"][2]["clock_offset_us"] == pytest.approx(-110_000.0, rel=0.05)
    # 7 collectives × at most 4 µs of jitter each: nobody waited
    assert max(r["wait_us"] for r in job["per_rank"]) <= 7 * 4
    assert _findings(job) == []
    # The same ranks without Seq: the signatures and clocks cannot tell the shifts apart and
    # the larger overlap wins, pairing rank 2's step 2 with the others' step 1: the wrong
    # pairing, whose clock offset has the wrong sign (about +110 ms), so this test fails
    # wherever Seq is not read.
    for d in docs:
        for e in d["traceEvents"]:
            (e.get("args") or {}).pop("Seq", None)
    job = pj.job(docs, tmp_path / "without")
    assert "seq" not in job["alignment"] and job["per_rank"][2]["clock_offset_us"] > 0


def test_a_host_that_enters_late_while_its_gpu_is_on_time_is_not_named(a100, tmp_path):
    # Rank 2's host runs 36 ms later than the others (less CPU run-ahead); its GPU keeps its
    # times. Nobody waits for it: no finding; the host figure is kept as information.
    docs = pj.copies(a100, 3)
    pj.jitter(docs)
    pj.host_late(docs[2], 36_000.0)
    job = pj.job(docs, tmp_path)
    assert _findings(job) == []
    late = {r["rank"]: r["median_late_us"] for r in job["lateness"]["per_rank"]}
    assert late[2] == pytest.approx(36_000.0, abs=10.0) and late[0] == 0.0


def test_a_rank_late_into_every_step_is_a_late_rank(a100, tmp_path):
    # Rank 2 starts each of the 3 steps 15 ms late, host and GPU (from the step's start):
    # the others wait 15 ms at each step's first collective (a broadcast). One finding,
    # late_ranks, others_wait 45 ms within 10%.
    delta = 15_000.0
    docs = pj.copies(a100, 3)
    pj.jitter(docs)
    for i, k in enumerate((0, 7, 14)):
        pj.delay(docs, 2, k, delta, after=pj.steps(docs[2])[i]["ts"] - 1)
    job = pj.job(docs, tmp_path)
    assert _findings(job) == [("late_ranks", 2)]
    assert job["per_rank"][2]["others_wait_us"] == pytest.approx(3 * delta, rel=0.10)
    assert job["per_rank"][2]["first_collective_pct"] > 99.0


def test_recsys_ranks_without_collective_args(tmp_path):
    # HTA's recsys rank 0 (no collective args: ops from the c10d calls, sizes unknown),
    # copied into 3 ranks; rank 0's window opens just after its first all_to_all began;
    # rank 1 reaches all_gather 4 (its step's first all_gather, kernel index 4) 8 ms late.
    docs = pj.copies(pj.load(pj.RECSYS), 3)
    pj.jitter(docs)
    pj.delay(docs, 1, 4, 8_000.0)
    pj.cut(docs[0], start=pj.nccl(docs[0])[0]["ts"] + 1)
    job = pj.job(docs, tmp_path)
    assert _findings(job) == [("stragglers", 1)]
    assert job["per_rank"][1]["others_wait_us"] == pytest.approx(8_000.0, rel=0.10)
    assert [r["dropped_head"] for r in job["per_rank"]] == [0, 1, 1]


def test_the_cli_names_the_delayed_rank(a100, tmp_path, capsys):
    # end to end: `trainprof analyze FOLDER --json` on the delayed job
    import json

    from trainprof.cli import main

    docs = pj.copies(a100, 3)
    pj.jitter(docs)
    pj.delay(docs, 2, 16, 10_000.0)
    pj.write(docs, tmp_path / "job")
    assert main(["analyze", str(tmp_path / "job"), "--json"]) == 0
    multi = json.loads(capsys.readouterr().out)["multi_rank"]
    assert [(f["id"], f["title"].split()[1]) for f in multi["findings"]] == [("stragglers", "2")]
    job = multi["collectives"]
    assert job["per_rank"][2]["others_wait_us"] == pytest.approx(10_000.0, rel=0.10)
    assert multi["findings"][0]["estimated_gain_pct"] == round(job["per_rank"][2]["gain_pct"], 2)
    assert all(s["rank"] == 2 for s in multi["stragglers"])  # the compute guess agrees or is dropped


def _sync_released_by(doc: dict, k: int, before_us: float, after_us: float = 50.0) -> None:
    """A cudaStreamSynchronize on a second host thread of the rank that blocks from
    `before_us` before its k-th collective ends until `after_us` after (a logging thread's
    `.item()` waiting for the stream that runs the collective)."""
    kern = pj.nccl(doc)[k]
    end = kern["ts"] + kern["dur"]
    main = next(e for e in doc["traceEvents"] if e.get("cat") == "cuda_runtime")
    doc["traceEvents"].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": main["pid"],
                               "tid": 999_999, "ts": end - before_us, "dur": before_us + after_us, "args": {}})


@pytest.mark.parametrize("late", [True, False])
def test_syncs_released_by_a_late_ranks_collectives_are_its_finding(a100, tmp_path, capsys, late):
    # Issue #39 item 3. Rank 2's GPU reaches the first collective of each of the 3 steps
    # (0, 7, 14) 20 ms late (late=True); ranks 0 and 1 each have a host sync per step that
    # blocks 25 ms and returns 50 µs after that collective ends (so 20 ms of each waited for
    # rank 2). One finding, on rank 2, citing both ranks' syncs; no host_sync finding on
    # ranks 0 and 1. With nobody late the same syncs are the ranks' own: they keep it.
    import json

    from trainprof.cli import main

    docs = pj.copies(a100, 3)
    pj.jitter(docs)
    for k in (0, 7, 14):
        if late:
            pj.delay(docs, 2, k, 20_000.0)
        for r in (0, 1):
            _sync_released_by(docs[r], k, 25_000.0)
    pj.write(docs, tmp_path / "job")
    assert main(["analyze", str(tmp_path / "job"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    per_rank = {r["rank"]: [f["id"] for f in r["findings"]] for r in out["ranks"]}
    job = out["multi_rank"]["findings"]
    if not late:
        assert job == [] and all("host_sync" in per_rank[r] for r in (0, 1))
        return
    assert [(f["id"], f["title"].split()[1]) for f in job] == [("stragglers", "2")]
    assert all("host_sync" not in per_rank[r] for r in (0, 1))
    for r in (0, 1):  # 3 × 20 ms of each rank's syncs waited for rank 2
        assert f"rank {r}: 60.0 ms blocked in host syncs that a collective waiting for it released" \
            in job[0]["evidence"]
