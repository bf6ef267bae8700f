"""Communication by parallelism axis and the pipeline bubble, on real gloo jobs
(tests/data/traces/cpu_parallel/, README there: how they were made and the planted truths).

The truth of each collective's axis comes from its content, not from the group names the
classifier reads: DP×TP's tensor-parallel all_reduces move 4·64·64 activations, its
data-parallel one the flat gradients; DP×PP's send/recv are the pipeline, its tied-embedding
all_reduce (256·64 elements, first and last stage) too, the flat gradients are data parallel.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec
import pytest

from trainprof.analysis.job.axes import (axis_of_name, classify, coordinate_label, groups_of, mesh_lines,
                                        rank_coordinates)
from trainprof.analysis.job.bubble import inherent_fraction, job_pipeline
from trainprof.analysis.job.collectives import rank_collectives
from trainprof.analysis.job.collectives_job import job_collectives
from trainprof.analysis.timeline.context import Context
from trainprof.diagnose.pipeline_rules import pipeline_findings
from trainprof.trace import read_trace

DATA = Path(__file__).parents[2] / "data" / "traces" / "cpu_parallel"
ACTIVATIONS = 4 * 64 * 64  # dp2_tp2: rows per replica × seq × d_model
TIED = 256 * 64  # dp2_pp2: vocab × d_model


def _blocks(layout: str) -> dict:
    out = {}
    for f in sorted((DATA / layout).glob("rank*.json.gz")):
        t = read_trace(f)
        out[t.meta.rank] = rank_collectives(Context.build(t))
    return out


@pytest.fixture(scope="module")
def blocks() -> dict:
    return {name: _blocks(name) for name in ("dp2_tp2", "pp2", "pp2_planted", "dp2_pp2", "pp2_1f1b")}


@pytest.fixture(scope="module")
def jobs(blocks) -> dict:
    return {name: job_collectives(b) for name, b in blocks.items()}


def _axis_per_instance(b: dict, job) -> list[tuple[int, str, int | None, str]]:
    axis = {g.name: g.axis for g in job.process_groups}
    return [(r, op, n, axis[g]) for r, blk in b.items() for op, n, g in zip(blk.op, blk.nelems, blk.group)]


def test_reader_keeps_the_process_groups_and_the_mesh():
    t = read_trace(DATA / "dp2_tp2" / "rank1.json.gz")
    groups = {g.desc: g.ranks for g in t.meta.process_groups}
    assert groups == {"default_pg": (0, 1, 2, 3), "dp": (1, 3), "tp": (0, 1)}  # mesh_dp, mesh_tp: the axis kept
    assert t.meta.mesh.dims == (("dp", 2), ("tp", 2))
    assert len(t.meta.mesh.threads) == 6  # two gloo workers per group: default, dp, tp


def test_dp_tp_every_collective_on_its_axis(blocks, jobs):
    b, job = blocks["dp2_tp2"], jobs["dp2_tp2"]
    rows = _axis_per_instance(b, job)
    assert len(rows) == 4 * 34  # per rank 32 TP all_reduces (2 steps × 4 blocks × 2 × fwd/bwd) + 2 DP
    for r, op, n, axis in rows:
        assert op == "all_reduce"
        assert axis == ("tp" if n == ACTIVATIONS else "dp"), (r, n, axis)
    assert {g.rule for g in job.process_groups} == {"name"}
    assert job.matched == 2 * 32 + 2 * 2 and job.consistent  # every collective found on its group's ranks
    axes = {a.axis: a for a in job.axes}
    assert set(axes) == {"tp", "dp"} and axes["tp"].collectives == 64 and axes["dp"].collectives == 4
    for a in job.axes:  # parts add up
        assert 0 <= a.exposed_us <= a.time_us + 1e-6 and a.wait_us <= a.time_us + 1e-6
        assert 0 <= a.share_pct <= 100
    # a blocking TP all_reduce inside a module's forward hides behind no compute
    assert axes["tp"].compute_overlap_pct < 20


def test_dp_pp_every_collective_on_its_axis(blocks, jobs):
    b, job = blocks["dp2_pp2"], jobs["dp2_pp2"]
    rows = _axis_per_instance(b, job)
    for r, op, n, axis in rows:
        truth = "pp" if op in ("send", "recv") or n == TIED else "dp"
        assert axis == truth, (r, op, n, axis)
    assert sum(op in ("send", "recv") for _, op, _, _ in rows) == 4 * 16  # 2 steps × 4 micro-batches × fwd+bwd
    peers = {(r, p) for r, blk in b.items() for op, p in zip(blk.op, blk.peer) if op in ("send", "recv")}
    assert peers == {(0, 2), (2, 0), (1, 3), (3, 1)}  # stages of one pipeline: the mesh's pp lines


def test_pp_p2p_and_tied_on_the_pipeline_axis(blocks, jobs):
    job = jobs["pp2"]
    (g,) = job.process_groups
    assert (g.axis, g.rule) == ("pp", "mesh")  # the default group carries the pipeline: the layout says so
    assert [a.axis for a in job.axes] == ["pp"]


def _bare(groups: dict) -> dict:
    return {k: type(v)(v.name, None, v.ranks, v.p2p) for k, v in groups.items()}


def test_rules_agree_without_names(blocks):
    """The same jobs with the descriptions removed: the recorded mesh decides (rule `mesh`),
    and every group keeps its axis; without the mesh too, the rank-set shape (rule `shape`)
    is right on DP×TP, and on DP×PP takes the consecutive data-parallel pair for tensor
    parallel — the convention's limit, said by the rule (docs/collectives.md)."""
    for name in ("dp2_tp2", "dp2_pp2"):
        groups = groups_of(blocks[name])
        by_name = classify(groups, 4, None)
        dims = [tuple(d) for d in blocks[name][0].mesh.dims]
        by_mesh = classify(_bare(groups), 4, dims)
        assert {k: v[0] for k, v in by_mesh.items()} == {k: v[0] for k, v in by_name.items()}
        assert {v[1] for v in by_mesh.values()} == {"mesh"} and {v[1] for v in by_name.values()} == {"name"}
    by_shape = classify(_bare(groups_of(blocks["dp2_tp2"])), 4, None)
    assert {k: v for k, v in by_shape.items()} == {"1": ("dp", "shape"), "2": ("dp", "shape"),
                                                    "3": ("tp", "shape"), "4": ("tp", "shape")}
    pp_shape = classify(_bare(groups_of(blocks["dp2_pp2"])), 4, None)
    assert pp_shape["1"] == ("pp", "shape") and pp_shape["3"] == ("tp", "shape")  # truly dp: the limit


def test_axis_names_and_mesh_lines():
    assert [axis_of_name(x) for x in ("mesh_tp", "mesh_dim_dp", "dp_shard", "pp_tied_embedding", "mesh_ep",
                                      "mesh_cp", "default_pg", "0")] == ["tp", "dp", "fsdp", "pp", "ep", "cp", None, None]
    assert mesh_lines([("pp", 2), ("dp", 2)]) == {(0, 2): "pp", (1, 3): "pp", (0, 1): "dp", (2, 3): "dp"}


def test_rank_coordinates_from_the_mesh_or_the_groups():
    # DeviceMesh (pp, dp) = (2, 2), row-major: rank 1 is pp0·dp1, rank 2 pp1·dp0
    by_mesh = rank_coordinates([0, 1, 2, 3], [("pp", 2), ("dp", 2)], [])
    assert [coordinate_label(by_mesh[r]) for r in range(4)] == ["dp0·pp0", "dp1·pp0", "dp0·pp1", "dp1·pp1"]
    # without the mesh: the index in the largest group of each axis (the tied pair {0, 2} on
    # pp is smaller than no other pp group here, and {1, 3}'s rank 3 is stage 1 of its line)
    groups = [("pp", [0, 2]), ("pp", [1, 3]), ("dp", [0, 1]), ("dp", [2, 3]), ("world", [0, 1, 2, 3])]
    assert rank_coordinates([0, 1, 2, 3], None, groups) == by_mesh
    tied = [("pp", [0, 1, 2, 3]), ("pp", [0, 3])]  # a 4-stage line and its first/last tied pair
    assert rank_coordinates([3], None, tied) == {3: {"pp": 3}}


def test_balanced_bubble_matches_the_schedule(blocks, jobs):
    jp = job_pipeline(blocks["pp2"], jobs["pp2"])
    (p,) = jp.pipelines
    assert (p.stages, p.microbatches, p.schedule) == (2, 4, "gpipe")
    assert p.inherent_pct == pytest.approx(100 * inherent_fraction(2, 4)) == pytest.approx(20.0)
    assert abs(p.measured_pct - p.inherent_pct) <= 2.0  # measured 21.1%
    for s in p.per_stage:  # parts add up
        assert 0 <= s.recv_wait_us <= s.bubble_us and s.busy_us + s.bubble_us == pytest.approx(p.window_us)
    assert p.what_if_inherent_pct == pytest.approx(100 / 9)  # m = 8: 1/9


def _planted_us() -> float:
    with gzip.open(DATA / "pp2_planted" / "rank1.json.gz") as f:
        ev = json.load(f)["traceEvents"]
    return sum(e["dur"] for e in ev if e.get("name") == "trainprof.planted_delay")


def test_planted_delay_is_excess_bubble_named_on_its_stage(blocks, jobs):
    planted = _planted_us()  # 1,205.7 ms slept by stage 1 over the 3 steps
    (p,) = job_pipeline(blocks["pp2_planted"], jobs["pp2_planted"]).pipelines
    s0, s1 = p.per_stage
    assert p.slowest_stage == 1
    assert s1.imbalance_us == pytest.approx(planted, rel=0.10)  # measured 1,309 ms
    assert s0.excess_us == pytest.approx(planted, rel=0.10)  # measured 1,222 ms: stage 0 waited for it
    assert s1.excess_us < 0.1 * planted  # the slow stage itself is not the one that waits
    (f,) = pipeline_findings(msgspec.convert({"pipelines": [msgspec.to_builtins(p)]},
                                             type=type(job_pipeline(blocks["pp2"], jobs["pp2"]))))
    assert f.id == "pipeline_bubble" and "stage 1 (rank 1)" in f.title and "rebalance" in f.fix
    assert "m = 8" in f.fix


def test_balanced_pipeline_names_no_stage(blocks, jobs):
    jp = job_pipeline(blocks["pp2"], jobs["pp2"])
    found = pipeline_findings(jp)
    assert all("holds the pipeline" not in f.title for f in found)


def test_one_f_one_b_balanced_bubble_from_our_ranges(blocks, jobs):
    """torch 2.13's Schedule1F1B marks no micro-batch; workload/pipeline.py's own ranges
    (`trainprof.pp_forward i`, `trainprof.pp_backward i`) give its bubble: the same formula."""
    (p,) = job_pipeline(blocks["pp2_1f1b"], jobs["pp2_1f1b"]).pipelines
    assert (p.stages, p.microbatches, p.schedule) == (2, 4, "1f1b")  # 4 forward ranges per step, not 8
    assert p.inherent_pct == pytest.approx(20.0)
    assert abs(p.measured_pct - p.inherent_pct) <= 2.0  # measured 18.3% (README there)
    for s in p.per_stage:
        assert 0 <= s.recv_wait_us <= s.bubble_us and s.busy_us + s.bubble_us == pytest.approx(p.window_us)
    assert p.window_us > 0 and len(p.steps) == 3


def test_one_f_one_b_is_not_measured_without_ranges(blocks, jobs):
    """A 1F1B trace recorded before trainprof marked its micro-batches (dp2_pp2): no bubble
    rather than a wrong one."""
    assert all(b.pipeline is msgspec.UNSET for b in blocks["dp2_pp2"].values())
    assert job_pipeline(blocks["dp2_pp2"], jobs["dp2_pp2"]) is None


@pytest.mark.slow  # analyze starts a worker per rank: ~5 s on 2 cores
def test_analyze_prints_the_axes_and_records_them(tmp_path, capsys):
    from trainprof.cli import main

    out = tmp_path / "a"
    assert main(["analyze", str(DATA / "pp2_planted"), "--out", str(out), "--no-report"]) == 0
    text = capsys.readouterr().out
    assert "Communication per parallelism axis" in text and "Pipeline bubble" in text
    rec = json.loads((out / "analysis.json").read_text())["multi_rank"]
    assert [a["axis"] for a in rec["collectives"]["axes"]] == ["pp"]
    (p,) = rec["pipeline"]["pipelines"]
    assert p["slowest_stage"] == 1
    assert any(f["id"] == "pipeline_bubble" for f in rec["findings"])


REAL = Path(__file__).parents[2] / "data" / "traces" / "real"


@pytest.mark.parametrize("path,world", [
    ("tracelens_mi300_resnet_ddp_8rank_rank0/resnet_act_checkpoint.json.gz", 8),  # RCCL, MI300X
    ("hta_ddp_2rank_nccl_a100/nccl_data.json.gz", 2),  # NCCL, A100
])
def test_public_gpu_ddp_ranks_record_their_group_and_it_is_the_data_parallel_axis(path, world):
    """The shared GPU traces that record process groups (`Process Group Name/Description/Ranks`
    on every collective) are one rank each of a plain DDP job: one group, `default_pg`, over the
    whole world. Its description names no axis, so the shape rule decides: the whole world in a
    job with no other group is data parallel, the truth for DDP. The MI300 rank's kernels that
    match no collective record (group `default`) ran in that same default group: they were a
    1-rank group called `tp`, and made the real group `world`."""
    t = read_trace(REAL / path)
    block = rank_collectives(Context.build(t))
    (pg,) = block.process_groups
    assert (pg.desc, tuple(pg.ranks), t.world_size) == ("default_pg", tuple(range(world)), world)
    groups = groups_of({t.rank: block})
    assert set(classify(groups, world, None).values()) == {("dp", "shape")}
