"""Each rule: a planted positive and a near-miss negative, on records whose shape is a real
analysed trace's: `rank()` starts from one small real trace analysed once (below), with
hand-set healthy numbers laid over it so every answer can be worked on paper. A field the
overlay sets must exist in the real record, so a renamed or moved analyser field fails here
instead of leaving the rules tested on a shape the analyser no longer writes (issue #21)."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import msgspec
import pytest

from trainprof.diagnose import Thresholds, diagnose_job, diagnose_rank
from trainprof.diagnose import rules
from trainprof.diagnose.registry import RuleInput
from trainprof.diagnose.engine import principal, measured_principal
from trainprof.recordtypes.base import as_struct
from trainprof.recordtypes.analysis import Rank
from trainprof.recordtypes.run import RunRecord

from tests.plain import plain
from tests.unit.diagnose.run_records import run_record

TH = Thresholds()
SPAN = 1_000_000.0  # µs of GPU timeline: 1% = 10,000 µs
# 7 KB, 2 profiler steps of a small training loop on an MI250 (tests/data/traces/real/SOURCES.md)
MINI = (Path(__file__).resolve().parents[2] / "data" / "traces" / "real" / "hta_small_edge_cases"
        / "mi250_minitoy_train_ROCm6_2_kineto.json.gz")


@functools.lru_cache(maxsize=1)
def real_rank() -> dict:
    """MINI's ranks[0], analysed as `trainprof analyze` does (once per test session), as
    its file holds it (the overlays below are dicts)."""
    from trainprof.analysis.cost.roofline import Roof
    from trainprof.analysis.trace_report import analyze_trace
    from trainprof.trace import read_trace

    trace = read_trace(str(MINI))
    return plain(analyze_trace(trace, file=str(MINI), roof=Roof({}, None, "unknown", trace.device_name)))


def with_peaks(r: Rank, peaks: dict | None) -> Rank:
    """`r` with the device's peaks by dtype (TFLOP/s) planted in its roofline, where the
    low_tensor_core rule reads them."""
    return msgspec.structs.replace(r, roofline=msgspec.structs.replace(r.roofline, peaks_by_dtype=peaks))


# dicts whose keys are data (a dtype, a memcpy kind), not fields
DATA_KEYED = {"$.roofline.peaks_by_dtype", "$.memcpy.by_kind"}


def _shape_check(over: object, real: object, path: str) -> None:
    """Every key `over` sets exists in the real record at the same place (lists: in some item)."""
    if isinstance(over, dict) and isinstance(real, dict) and path not in DATA_KEYED:
        for k, v in over.items():
            assert k in real, f"{path}.{k}: not a field of the analysed record (did the analyser rename it?)"
            _shape_check(v, real[k], f"{path}.{k}")
    elif isinstance(over, list) and isinstance(real, list) and real and all(isinstance(x, dict) for x in real):
        keys = set().union(*real)
        for item in over:
            if isinstance(item, dict):
                missing = set(item) - keys
                assert not missing, f"{path}[]: {sorted(missing)} not fields of the analysed record's items"


# A healthy GPU rank: nothing should fire. Numbers chosen to be worked by hand (SPAN µs).
HEALTHY = {
    "rank": 0, "has_gpu": True, "steps": 10, "per_step": [{"cpu_us": 100_000.0}] * 10,
    # the GPU time table's parts add up: compute 90 + communication 0 + memcpy 0 + memset 0 + sync 0 + idle 10
    "temporal_breakdown": {"compute_pct": 90.0, "communication_pct": 0.0, "memcpy_pct": 0.0, "memset_pct": 0.0,
                           "sync_pct": 0.0, "idle_pct": 10.0},
    "idle_breakdown": {"span_us": SPAN, "work_span_us": SPAN, "idle_us": 20_000.0, "data_loading_us": 0.0,
                       "host_sync_us": 0.0, "host_launch_us": 0.0, "other_us": 20_000.0, "unattributed_us": 0.0,
                       "allocator_us": 0.0, "allocator_calls": [],
                       "dataloader_us": 0.0, "sync_calls": [], "sync_ops": [], "call_sites": []},
    # no what-if block: a finding's gain is its rule's own share (the model's bound: below)
    "whatif": None,
    "launch_stats": {"kernels_per_step": 100, "short_kernel_count_pct": 10.0, "short_kernel_threshold_us": 10.0,
                     "launch_to_start": {"p50_us": 200.0}},
    "memcpy": {"pageable_us": 0.0, "pageable_count": 0, "by_kind": {}},
    "kernel_classes": [{"class": "gemm", "total_us": 800_000.0}, {"class": "elementwise", "total_us": 100_000.0}],
    "matmul_us": 800_000.0, "matmul_tensor_core_us": 790_000.0,
    "communication": {"kernels": 0, "exposed_us": 0.0, "overlap_pct": None, "collectives": []},
    "optimizer": {"steps": 10, "classes": ["AdamW"], "gpu_us": 10_000.0, "kernels_per_step": 40},
    "attention": {"math_calls": 0, "fused_calls": 12, "math_gpu_us": 0.0},
    "roofline_points": [],
    "roofline": {"peaks_by_dtype": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0}},
}


def _lay(r: dict, over: dict) -> dict:
    _shape_check(over, r, "$")
    for k, v in over.items():
        r[k] = {**r[k], **v} if isinstance(v, dict) and isinstance(r.get(k), dict) else v
    return r


def rank_dict(**over) -> dict:
    """The real record with the healthy numbers, then the case's own (dicts merge one level)."""
    return _lay(_lay(copy.deepcopy(real_rank()), copy.deepcopy(HEALTHY)), over)


def rank(**over) -> Rank:
    """rank_dict(...) as the rules read it: the record's Struct."""
    return as_struct(rank_dict(**over), Rank)


def point(**kw) -> dict:
    """A roofline point (recordtypes/roofline.py) with the case's fields; the rest, which the
    rules read not, zero."""
    return {"count": 1, "flops": 0.0, "bytes": 0.0, "intensity": 0.0, "achieved_tflops": 0.0, **kw}


def scenario(label: str, gain_pct: float, **kw) -> dict:
    """A standard what-if (recordtypes/graph.py Scenario) with the case's gain (and bound)."""
    return {"label": label, "edits": [], "edges_changed": 0, "measured_step_us": 100.0,
            "projected_step_us": 100.0 * (1 - gain_pct / 100), "gain_pct": gain_pct, **kw}


def path_step(step: int, length_us: float, share_us: dict) -> dict:
    """A step's critical path (recordtypes/graph.py PathStep) with its shares by kind."""
    return {"step": step, "start_us": 0.0, "length_us": length_us, "share_us": share_us,
            "share_pct": {k: 100.0 * v / length_us for k, v in share_us.items()}, "top_ops": [], "segments": [],
            "segments_merged": 0}


def test_the_overlay_check_is_not_vacuous():
    # a field the analyser does not write is caught, at its path
    with pytest.raises(AssertionError, match=r"\$\.idle_breakdown\.data_loader_us"):
        rank(idle_breakdown={"data_loader_us": 1.0})
    assert {"critical_path", "whatif", "top_kernels"} <= set(rank_dict())  # the rest is the real record's


def run(**summary) -> RunRecord:
    """A whole run.json record (run_records.run_record) with the summary fields a rule reads."""
    s = {"step_time_s": 1.0, "data_s": 0.01, "h2d_s": 0.0, "forward_s": 0.3, "backward_s": 0.6,
         "optimizer_s": 0.05, "other_s": 0.04, "peak_memory_bytes": 30 * 2**30, "mfu": 0.4}
    s.update(summary)
    return run_record(s, device={"memory_total_bytes": 80 * 2**30}, config={"micro_batch": 8, "optimizer": "foreach"})


def ids(findings) -> list[str]:
    return [f.id for f in findings]


def test_a_healthy_rank_and_run_raise_nothing():
    assert diagnose_rank(rank(), run()) == []
    assert principal([], rank()) == "compute"


def test_data_loading():
    f = rules.data_loading(RuleInput(rank(idle_breakdown={"data_loading_us": 300_000.0, "dataloader_us": 400_000.0}), None, TH))
    assert f.id == "data_loading" and f.estimated_gain_pct == 30.0 and f.bottleneck == "data"
    assert "--num-workers" in f.fix and f.severity == "high"
    assert rules.data_loading(RuleInput(rank(idle_breakdown={"data_loading_us": 40_000.0}), None, TH)) is None  # 4% < 5%
    # from a run's step split (CPU or no trace)
    assert rules.data_loading(RuleInput(None, run(data_s=0.2), TH)).estimated_gain_pct == pytest.approx(20.0)
    assert rules.data_loading(RuleInput(None, run(data_s=0.04), TH)) is None


def test_host_sync_counts_and_call_sites():
    planted = rank(idle_breakdown={
        "host_sync_us": 50_000.0, "sync_ops": [{"name": "aten::item", "count": 30, "total_us": 90.0}],
        "sync_calls": [{"name": "cudaStreamSynchronize", "count": 30, "total_us": 500.0}],
        "call_sites": [{"call": "cudaStreamSynchronize", "op": "aten::item > aten::_local_scalar_dense",
                        "python": "train.py(42): step", "gaps": 30, "idle_us": 50_000.0}]})
    f = rules.host_sync(RuleInput(planted, None, TH))
    assert f.estimated_gain_pct == 5.0 and "30 aten::item (3/step)" in f.evidence
    assert "train.py(42)" in f.evidence and f.confidence == "high"
    # near miss: a few syncs outside the steps, no idle from them
    few = rank(idle_breakdown={"host_sync_us": 1_000.0, "sync_calls": [{"name": "cudaDeviceSynchronize", "count": 1,
                                                                          "total_us": 5.0}]})
    assert rules.host_sync(RuleInput(few, None, TH)) is None
    assert rules.host_sync(RuleInput(rank(has_gpu=False), None, TH)) is None


def test_host_sync_call_site_not_recorded():
    # issue #32: "cudaEventSynchronize in ?" where the trace records neither op nor line
    r = rank(idle_breakdown={"host_sync_us": 50_000.0,
                             "sync_calls": [{"name": "cudaEventSynchronize", "count": 24, "total_us": 90.0}],
                             "call_sites": [{"call": "cudaEventSynchronize", "op": None, "python": None, "gaps": 2,
                                             "idle_us": 50_000.0}]})
    f = rules.host_sync(RuleInput(r, None, TH))
    assert "biggest: cudaEventSynchronize (call site not recorded) (2 gaps, 50.0 ms)" in f.evidence
    assert " in (" not in f.evidence and "?" not in f.evidence


def test_allocator_churn():
    # 40 ms of 1 s GPU timeline idle behind cudaFree/cudaMalloc (4% ≥ 2%), 40 of 80 ms idle
    calls = [{"name": "cudaFree", "count": 6, "total_us": 30_000.0}, {"name": "cudaMalloc", "count": 9, "total_us": 9_000.0}]
    f = rules.allocator_churn(RuleInput(rank(idle_breakdown={"allocator_us": 40_000.0, "idle_us": 80_000.0,
                                                   "allocator_calls": calls}), None, TH))
    assert f.id == "allocator_churn" and f.estimated_gain_pct == 4.0 and f.bottleneck == "host overhead"
    assert "(50% of its idle time, 4.0% of the GPU timeline)" in f.evidence and "6 cudaFree (30.0 ms)" in f.evidence
    assert "empty_cache()" in f.fix and "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in f.fix
    # ROCm names its own variable
    hip = [{"name": "hipFree", "count": 6, "total_us": 30_000.0}]
    f = rules.allocator_churn(RuleInput(rank(idle_breakdown={"allocator_us": 40_000.0, "allocator_calls": hip}), None, TH))
    assert "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True" in f.fix
    # near miss: 1.5% of the timeline
    assert rules.allocator_churn(RuleInput(rank(idle_breakdown={"allocator_us": 15_000.0}), None, TH)) is None


def test_pageable_memcpy():
    f = rules.pageable_memcpy(RuleInput(rank(memcpy={"pageable_us": 20_000.0, "pageable_count": 10,
                                           "by_kind": {"HtoD Pageable->Device": {}}}), None, TH))
    assert f.estimated_gain_pct == 2.0 and "pin_memory=True" in f.fix
    assert rules.pageable_memcpy(RuleInput(rank(memcpy={"pageable_us": 9_000.0}), None, TH)) is None


def test_low_tensor_core():
    r = rank(matmul_tensor_core_us=100_000.0)  # 700 ms of GEMM on CUDA cores
    f = rules.low_tensor_core(RuleInput(with_peaks(r, {"fp32": 19.5, "bf16": 312.0}), None, TH))
    assert f.estimated_gain_pct == pytest.approx(70.0 * (1 - 19.5 / 312.0), abs=0.01)
    assert "--dtype bf16" in f.fix
    assert rules.low_tensor_core(RuleInput(with_peaks(rank(), {"fp32": 19.5, "bf16": 312.0}), None, TH)) is None  # 99% TC
    # V100-like fp32 vs fp16 8x: fires; a GPU without Tensor Cores (ratio < 4): never
    assert rules.low_tensor_core(RuleInput(with_peaks(r, {"fp32": 10.0, "fp16": 20.0}), None, TH)) is None
    assert rules.low_tensor_core(RuleInput(with_peaks(r, None), None, TH)) is None


def test_launch_bound():
    planted = rank(idle_breakdown={"host_launch_us": 200_000.0},
                   launch_stats={"short_kernel_count_pct": 80.0, "launch_to_start": {"p50_us": 8.0}})
    f = rules.launch_bound(RuleInput(planted, None, TH))
    assert f.estimated_gain_pct == 20.0 and "torch.compile" in f.fix
    # near miss: few short kernels, and launching is 200 of 500 ms idle (40% < 50%)
    near = rank(idle_breakdown={"host_launch_us": 200_000.0, "idle_us": 500_000.0},
                launch_stats={"short_kernel_count_pct": 30.0})
    assert rules.launch_bound(RuleInput(near, None, TH)) is None
    # issue #32 (hta_ddp_2rank_nccl_a100: host launch 97.1% of idle, no finding): the same
    # kernels, but launching is 200 of 210 ms idle (95% ≥ 50%): the host is what the GPU waits for
    dom = rank(idle_breakdown={"host_launch_us": 200_000.0, "idle_us": 210_000.0},
               launch_stats={"short_kernel_count_pct": 30.0})
    f = rules.launch_bound(RuleInput(dom, None, TH))
    assert f.estimated_gain_pct == 20.0 and "95% of its idle time" in f.evidence
    assert "CUDA graphs" in f.fix and "Python and operator dispatch" in f.fix


def test_small_batch():
    f = rules.small_batch(RuleInput(None, run(peak_memory_bytes=8 * 2**30, other_s=0.2), TH))
    assert f.id == "small_batch" and "--micro-batch 32" in f.fix  # 10% of memory used: ×4
    assert f.estimated_gain_pct == pytest.approx(20 * 0.75)
    assert rules.small_batch(RuleInput(None, run(peak_memory_bytes=60 * 2**30, other_s=0.2), TH)) is None  # memory is full
    assert rules.small_batch(RuleInput(None, run(peak_memory_bytes=8 * 2**30, other_s=0.05), TH)) is None


def test_unaligned_shapes():
    pts = [point(name="aten::mm", input_dims=[[8192, 768], [768, 50257]], dtype="bf16", device_time_us=100_000.0,
                 **{"class": "gemm"}),
           point(name="aten::mm", input_dims=[[8192, 768], [768, 3072]], dtype="bf16", device_time_us=100_000.0,
                 **{"class": "gemm"})]
    f = rules.unaligned_shapes(RuleInput(rank(roofline_points=pts), None, TH))
    assert "N = 50257 (output features)" in f.evidence and "--pad-vocab" in f.fix
    # 50304 is the next multiple of 64 (+0.09%): the padding to use, named with the op
    assert "pad 50257 → 50304 in aten::mm [8192, 768] × [768, 50257]" in f.fix
    assert f.estimated_gain_pct == pytest.approx(0.25 * 10.0)
    aligned = copy.deepcopy(pts)
    aligned[0]["input_dims"] = [[8192, 768], [768, 50304]]
    assert rules.unaligned_shapes(RuleInput(rank(roofline_points=aligned), None, TH)) is None


def test_unaligned_batched_matmul_is_not_told_to_pad_the_vocabulary():
    # a vision model's attention scores: bmm with a 5185-token dimension (ViT, 72×72 patches + 1)
    pts = [point(name="aten::bmm", input_dims=[[192, 5185, 64], [192, 64, 5185]], dtype="bf16",
                 device_time_us=100_000.0, **{"class": "gemm"})]
    f = rules.unaligned_shapes(RuleInput(rank(roofline_points=pts), None, TH))
    assert "aten::bmm [192, 5185, 64] × [192, 64, 5185]" in f.evidence
    assert "M = 5185" in f.evidence and "N = 5185" in f.evidence
    # 5185 → 5248: next multiple of 64, +1.2% (≤ 5%), named once
    assert "pad 5185 → 5248 in aten::bmm" in f.fix and f.fix.count("5185 → 5248") == 1
    assert "vocabulary" not in f.fix and "sequence/token count" in f.fix
    # linear on fp32: 4-element granule; a 1000-wide hidden size pads to 1000 (aligned) → no finding
    fp32 = [point(name="aten::linear", input_dims=[[32, 128, 1000], [1000, 1000], [1000]], dtype="fp32",
                  device_time_us=100_000.0, **{"class": "gemm"})]
    assert rules.unaligned_shapes(RuleInput(rank(roofline_points=fp32), None, TH)) is None


def test_optimizer_bound():
    r = run(optimizer_s=0.3)
    r.config["optimizer"] = "forloop"
    f = rules.optimizer_bound(RuleInput(None, r, TH))
    assert f.estimated_gain_pct == pytest.approx(20.0) and "fused=True" in f.fix
    assert "foreach=True" in f.fix  # from the for-loop, either batched form helps
    r.config["optimizer"] = "foreach"
    g = rules.optimizer_bound(RuleInput(None, r, TH))
    assert g is not None and "fused=True" in g.fix and "foreach=True" not in g.fix  # never the fix it already runs
    r.config["optimizer"] = "fused"
    assert rules.optimizer_bound(RuleInput(None, r, TH)) is None  # already fused
    assert rules.optimizer_bound(RuleInput(None, run(optimizer_s=0.05), TH)) is None
    trace_only = rank(optimizer={"gpu_us": 200_000.0, "kernels_per_step": 400, "classes": ["AdamW"]})
    assert rules.optimizer_bound(RuleInput(trace_only, None, TH)).estimated_gain_pct == pytest.approx(20 * 2 / 3, abs=0.01)


def test_exposed_communication():
    comm = {"kernels": 100, "exposed_us": 150_000.0, "overlap_pct": 20.0,
            "collectives": [{"collective": "allreduce", "count": 100, "total_us": 190_000.0}]}
    f = rules.exposed_communication(RuleInput(rank(communication=comm), None, TH))
    assert f.estimated_gain_pct == 15.0 and f.bottleneck == "communication" and "no_sync" in f.fix
    assert rules.exposed_communication(RuleInput(rank(communication={**comm, "exposed_us": 40_000.0}), None, TH)) is None


def test_memory_pressure():
    f = rules.memory_pressure(RuleInput(None, run(peak_memory_bytes=76 * 2**30), TH))
    assert f.id == "memory_pressure" and "expandable_segments" in f.fix
    assert rules.memory_pressure(RuleInput(None, run(peak_memory_bytes=60 * 2**30), TH)) is None


def test_math_attention():
    f = rules.math_attention(RuleInput(rank(attention={"math_calls": 24, "fused_calls": 0, "math_gpu_us": 100_000.0}), None, TH))
    assert f.estimated_gain_pct == 5.0 and "is_causal=True" in f.fix
    assert rules.math_attention(RuleInput(rank(), None, TH)) is None


def test_findings_are_ranked_and_name_the_bottleneck():
    # a data-starved GPU: compute kernels cover 25% of the timeline, the DataLoader idle 30%
    r = rank(idle_breakdown={"data_loading_us": 300_000.0}, memcpy={"pageable_us": 20_000.0, "pageable_count": 3,
                                                                     "by_kind": {}},
             temporal_breakdown={"compute_pct": 25.0, "memcpy_pct": 2.0, "idle_pct": 73.0},
             whatif=None)  # a record without what-if projections
    found = diagnose_rank(r, None)
    assert ids(found) == ["data_loading", "pageable_memcpy"]
    assert [f.estimated_gain_pct for f in found] == sorted((f.estimated_gain_pct for f in found), reverse=True)
    # idle 73% is the largest part of the GPU time; of its causes data 300,000 µs > other 20,000 µs
    assert principal(found, r) == "data"
    # the same idle under a busy GPU (compute 90%): the headline is still the top claim's class
    # (issue #39: it never contradicts the list under it); compute is where the time goes
    busy = rank(idle_breakdown={"data_loading_us": 300_000.0})
    assert principal(found, busy) == "data" and measured_principal(busy) == "compute"
    assert set(msgspec.to_builtins(found[0])) == {"id", "severity", "title", "evidence", "estimated_gain_pct", "fix", "confidence",
                             "bottleneck", "projected_gain_pct"}
    assert found[0].projected_gain_pct is None  # this record has no what-if block


def test_projected_gain_comes_from_the_whatif_block():
    # the rule fires on 30% (300 ms of a 1 s timeline idle behind the loader); the scenario
    # removes 22% of the step (its bound) and projects 12.5%: the finding's bound is the
    # scenario's, in the projection's own unit, so projected ≤ bound
    r = rank(idle_breakdown={"data_loading_us": 300_000.0},
             whatif={"method": "m", "scenarios": [scenario("remove data_loading", 12.5, bound_pct=22.0),
                                   scenario("remove host_sync", -0.3, bound_pct=0.0)]})
    (f,) = diagnose_rank(r, None)
    assert (f.estimated_gain_pct, f.projected_gain_pct) == (22.0, 12.5)
    assert "(30.0% of the GPU timeline)" in f.evidence  # what was seen stays in the evidence
    # a record written before scenarios carried a bound: the rule's own share
    old = rank(idle_breakdown={"data_loading_us": 300_000.0},
               whatif={"method": "m", "scenarios": [scenario("remove data_loading", 12.5)]})
    assert diagnose_rank(old, None)[0].estimated_gain_pct == 30.0


def test_findings_rank_by_projected_gain_and_say_why_it_is_below_the_bound():
    # exposed communication: bound 20%, projected 0.5%; data loading: bound 10%, projected 8%:
    # the projection ranks (8 > 0.5), not the bound (20 > 10)
    cp = {"steps": [path_step(1, 100.0, {"cpu_op": 90.0, "communication": 2.0, "kernel:gemm": 8.0})] * 3}
    r = rank(idle_breakdown={"data_loading_us": 300_000.0},
             communication={"kernels": 10, "exposed_us": 200_000.0, "overlap_pct": 10.0, "collectives": []},
             critical_path=cp,
             whatif={"method": "m", "scenarios": [scenario("remove data_loading", 8.0, bound_pct=10.0),
                                   scenario("remove exposed_comm", 0.5, bound_pct=20.0)]})
    found = diagnose_rank(r, None)
    assert ids(found) == ["data_loading", "exposed_communication"]
    comm = found[1]
    # the path of the steady steps (2 and 3): 2 of 100 µs communication, 90 host: the model's reason
    assert "projected 0.5% of the 20.0% bound: only 2.0% of the critical path is this cause" in comm.evidence
    assert "host work (the step is host-bound) (90%)" in comm.evidence
    assert "projected" not in found[0].evidence  # 8 of 10: nothing to explain


def test_thresholds_are_parameters():
    r = rank(idle_breakdown={"data_loading_us": 40_000.0})
    assert diagnose_rank(r, None) == []
    assert ids(diagnose_rank(r, None, Thresholds(data_loading_pct=3.0))) == ["data_loading"]


def test_stragglers_job_level():
    multi = {"ranks": 4, "step_time_us": {"min": 90_000.0, "median": 100_000.0, "max": 125_000.0},
             "stragglers": [{"rank": 3, "compute_excess_pct": 25.0, "others_wait_us": 20_000.0}]}
    (f,) = diagnose_job(multi)
    assert f.id == "stragglers" and f.estimated_gain_pct == 20.0 and "Rank 3" in f.title
    assert diagnose_job({"ranks": 4, "stragglers": []}) == [] and diagnose_job(None) == []


def test_a_block_of_the_wrong_shape_fails_at_its_path():
    # the rules read the Struct: an analyser writing a string where a count belongs fails
    # where the rank is converted, naming the field, not as a TypeError inside a rule
    import msgspec

    bad = rank_dict()
    bad["idle_breakdown"]["gaps"] = "many"
    with pytest.raises(msgspec.ValidationError, match=r"\$\.idle_breakdown\.gaps"):
        diagnose_rank(bad, None)
    with pytest.raises(msgspec.ValidationError, match=r"\$\.stragglers\[0\]\.others_wait_us"):
        diagnose_job({"ranks": 2, "stragglers": [{"rank": 1, "compute_excess_pct": 9.0, "others_wait_us": None}]})
