"""The job findings' invariants (diagnose/job_invariants.py): each violation is caught, the
repair keeps a report that holds, and every shipped multi-rank trace folder satisfies them."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from trainprof.analysis.job.collectives_job import job_collectives
from trainprof.diagnose.job_invariants import InvariantError, check_job_invariants, enforce
from trainprof.recordtypes.analysis import JobCollectives, MultiRank
from trainprof.recordtypes.base import as_struct
from trainprof.recordtypes.finding import Finding

from tests.plain import plain

REAL = Path(__file__).parents[2] / "data" / "traces" / "real"


def _block(starts, ends):
    n = len(starts)
    return {"source": "nccl", "count": n, "kept": n, "op": ["all_reduce"] * n, "group": ["0"] * n, "seq": list(range(n)), "bytes": [None] * n,
            "start_us": list(starts), "end_us": list(ends), "step_number": [], "step_cpu_start_us": []}


@pytest.fixture()
def job() -> dict:
    """The job's collectives as the file holds them (the cases below doctor the dicts)."""
    # rank 2 arrives 4 ms late at 5 collectives 10 ms apart; ranks 0 and 1 wait 4 ms each time
    starts = [i * 10_000 for i in range(5)]
    ends = [s + 6_000 for s in starts]
    late = [s + 4_000 for s in starts]
    return plain(job_collectives({0: _block(starts, ends), 1: _block(starts, ends), 2: _block(late, ends)}))


def test_a_measured_job_holds(job):
    # window 0 .. 46 ms; ranks 0 and 1 wait 5 × 4 = 20 ms each: total 40 ms, bound
    # 40 / (2 · 46) = 43.5%; rank 2's gain: the mean other rank's 20 ms / 46 ms = 43.5%
    j = as_struct(job, JobCollectives)
    r2 = job["per_rank"][2]
    assert job["wait_bound_pct"] == pytest.approx(100 * 40 / 92)
    assert r2["gain_pct"] == pytest.approx(100 * 20 / 46)
    assert check_job_invariants(j, [(2, round(r2["gain_pct"], 2))]) == []


@pytest.mark.parametrize("edit, named, message", [
    (lambda j: j["per_rank"][0].update(wait_us=1e9), [], "longer than its span"),
    (lambda j: j["per_rank"][0]["waited_for"][0].update(wait_us=1e9), [], "attributed to others exceed"),
    (lambda j: j["per_rank"][2].update(others_wait_us=1e9), [], "exceed the measured waits"),
    (lambda j: None, [(2, 50.0)], "more than the measured waits allow"),
    (lambda j: None, [(0, 1.0)], "rank 0 is named but was never the last"),
])
def test_each_violation_is_caught(job, edit, named, message):
    doctored = copy.deepcopy(job)
    edit(doctored)
    bad = check_job_invariants(as_struct(doctored, JobCollectives), named)
    assert any(message in b for b in bad), bad


def test_a_compute_straggler_that_only_waited_is_caught(job):
    assert check_job_invariants(as_struct(job, JobCollectives), [], [0]) != []
    assert check_job_invariants(as_struct(job, JobCollectives), [], [2]) == []


def _finding(gain):
    return Finding(id="stragglers", estimated_gain_pct=gain, evidence="e", title="t")


def test_strict_mode_raises_and_the_default_repairs(job, monkeypatch):
    multi = as_struct({"ranks": 3, "collectives": job}, MultiRank)
    bad = [(0, _finding(5.0)), (2, _finding(80.0))]
    monkeypatch.setenv("TRAINPROF_STRICT_INVARIANTS", "1")
    with pytest.raises(InvariantError, match="rank 0 is named"):
        enforce(multi, copy.deepcopy(bad))
    monkeypatch.delenv("TRAINPROF_STRICT_INVARIANTS")
    fixed = enforce(multi, copy.deepcopy(bad))
    # rank 0 (never last) dropped; rank 2's 80% scaled to the 43.5% bound
    assert [r for r, _ in fixed] == [2]
    assert fixed[0][1].estimated_gain_pct == pytest.approx(100 * 40 / 92, abs=0.01)
    assert bad[1][1].estimated_gain_pct == 80.0  # the input is not edited: a repaired finding is a new Struct


def _job_folders() -> list[Path]:
    """Every shipped folder that `analyze` reads as a job (two or more traces)."""
    return [d for d in sorted(REAL.iterdir()) if d.is_dir()
            and len([f for f in d.iterdir() if f.name.endswith((".json", ".json.gz"))]) >= 2]


@pytest.mark.parametrize("folder", _job_folders(), ids=lambda d: d.name)
def test_every_shipped_multi_rank_folder_holds(folder, monkeypatch):
    # the whole `analyze` path, with a violation raising (strict)
    from trainprof.jobs.analyze import analyze_paths

    monkeypatch.setenv("TRAINPROF_STRICT_INVARIANTS", "1")
    multi = plain(analyze_paths([str(folder)], jobs=1).multi_rank)
    named = [(int(f["title"].split()[1]), f["estimated_gain_pct"]) for f in multi["findings"]]
    if multi["collectives"] is None:
        # nothing matched: only the compute guess may name a rank, and only one the others
        # spent longer in collectives than (folders of unrelated traces: nobody)
        assert all(s["others_wait_us"] > 0 for s in multi["stragglers"])
        assert multi["communication_us"]["max"] > 0 or named == []
        return
    job = as_struct(multi["collectives"], JobCollectives)
    assert check_job_invariants(job, named, [s["rank"] for s in multi["stragglers"]]) == []
    assert sum(g for _, g in named) <= job.wait_bound_pct + 0.01


def test_the_shipped_job_folders_are_found():
    # one real job (2 sampled ranks of 128); two folders of unrelated traces a user may pass
    assert [d.name for d in _job_folders()] == ["hta_recsys_128rank_nccl_a100", "hta_small_edge_cases",
                                                "tracelens_h100_hf_inference"]


def test_collectives_that_never_match_leave_the_compute_guess(monkeypatch):
    # rank 0 runs all_reduces, rank 1 all_gathers: nothing matches, so no wait can confirm or
    # contradict the compute straggler guess; strict mode must not call it a violation
    gathers = {**_block([0, 10_000], [6_000, 16_000]), "op": ["all_gather"] * 2}
    unmatched = plain(job_collectives({0: _block([0, 10_000], [6_000, 16_000]), 1: gathers}))
    assert unmatched["matched"] == 0
    multi = as_struct({"ranks": 2, "collectives": unmatched, "stragglers": [
        {"rank": 0, "compute_excess_pct": 20.0, "others_wait_us": 1000.0}]}, MultiRank)
    monkeypatch.setenv("TRAINPROF_STRICT_INVARIANTS", "1")
    assert enforce(multi, []) == []  # raised "rank 0 is a compute straggler but was never the last" before
    assert check_job_invariants(as_struct(unmatched, JobCollectives), [], [0]) != []  # a matched job checks it
