"""Trace analysers on tests/data/traces/idle_causes.json, answers worked out on paper.

GPU timeline (µs): gemm [500,800], add [800,900], DtoH memcpy [950,1000], mul [1300,1400],
NCCL all-reduce [1350,1600] on another stream, bf16 gemm [2620,2900] (step 2).
All steps: span 500→2900 = 2400; compute ∪ = 400+100+280 = 780; communication not under
compute = [1400,1600] = 200; memcpy 50; idle = 2400 − 1030 = 1370 in three gaps:
  [900,950]   50  next = memcpy launched at 920 (after the gap began), no sync → host_launch
  [1000,1300] 300 next = mul launched at 1210; cudaStreamSynchronize returned at 1010 → host_sync
  [1600,2620] 1020 DataLoader range [2000,2600] covers 600/1020 ≥ 50%          → data_loading
The whole-trace breakdown and the idle causes use HTA's window (work launched before the last
step began at 2000): span 500→1600 = 1100, the first two gaps, idle 350.
"""

from pathlib import Path

import numpy as np
import pytest

from trainprof.analysis.timeline import intervals as iv
from trainprof.analysis.timeline.communication import collective_of, communication
from trainprof.analysis.timeline.context import Context
from trainprof.analysis.timeline.idle import idle_breakdown
from trainprof.analysis.timeline.launch import launch_stats
from trainprof.analysis.timeline.ops import class_breakdown, top_kernels, top_ops
from trainprof.analysis.timeline.temporal import per_step, temporal_breakdown
from trainprof.trace import read_trace

from tests.plain import plain

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"


@pytest.fixture(scope="module")
def ctx() -> Context:
    return Context.build(read_trace(DATA / "idle_causes.json"))


def test_temporal_breakdown_by_hand(ctx):
    # HTA's selection: two steps, so only work launched before the last step began (2000):
    # the bf16 gemm of step 2 is left out. span 500→1600.
    tb = plain(temporal_breakdown(ctx))
    assert tb["span_us"] == 1100
    assert (tb["compute_us"], tb["communication_us"], tb["memcpy_us"], tb["memset_us"]) == (500, 200, 50, 0)
    assert tb["idle_us"] == 350
    assert tb["compute_pct"] == pytest.approx(100 * 500 / 1100)
    assert sum(tb[f"{p}_pct"] for p in ("compute", "communication", "memcpy", "memset", "sync", "idle")) == pytest.approx(100)
    assert tb["sync_us"] == 0


def test_per_step_windows_bill_the_data_wait_to_the_next_step(ctx):
    s1, s2 = plain(per_step(ctx))
    assert (s1["step"], s2["step"]) == (1, 2)
    assert (s1["span_us"], s1["compute_us"], s1["communication_us"], s1["memcpy_us"], s1["idle_us"]) == (1100, 500, 200, 50, 350)
    assert (s2["span_us"], s2["compute_us"], s2["idle_us"]) == (1300, 280, 1020)
    assert s1["span_us"] + s2["span_us"] == 2400  # the steps partition the whole GPU timeline
    # the idle causes' window is the breakdown's: work launched before step 2, 350 µs
    assert s1["idle_us"] == idle_breakdown(ctx).idle_us == temporal_breakdown(ctx).idle_us


def test_idle_causes_by_hand(ctx):
    ib = plain(idle_breakdown(ctx))  # HTA's window: span 500→1600 = 1100, the breakdown's own
    tb = plain(temporal_breakdown(ctx))
    assert (ib["span_us"], ib["idle_us"]) == (tb["span_us"], tb["idle_us"]) == (1100, 350)
    assert ib["gaps"] == 2 and ib["work_span_us"] == 2400  # every step's work: 500→2900
    assert (ib["host_launch_us"], ib["host_sync_us"], ib["data_loading_us"]) == (50, 300, 0)
    assert ib["other_us"] == 0 and ib["unattributed_us"] == 0 and ib["allocator_us"] == 0
    site = ib["call_sites"][0]
    assert site["call"] == "cudaStreamSynchronize" and site["op"] == "aten::item" and site["idle_us"] == 300
    assert {"name": "aten::item", "count": 1, "total_us": 400.0} in ib["sync_ops"]
    assert ib["dataloader_us"] == 1000
    # the gaps themselves, in time order, each with its cause: 50 + 300 µs
    iv = ib["intervals"]
    assert sorted(zip(iv["dur_us"], iv["cause"])) == [(50, "host_launch"), (300, "host_sync")]
    assert iv["start_us"] == sorted(iv["start_us"]) and sum(iv["dur_us"]) == ib["idle_us"]


def test_idle_intervals_keep_the_longest(ctx, monkeypatch):
    from trainprof.analysis.timeline import idle

    monkeypatch.setattr(idle, "MAX_INTERVALS", 1)
    assert idle_breakdown(ctx).intervals.dur_us == [300]  # the 50 µs gap is the one left out


def test_top_ops_bill_kernels_to_the_leaf_op(ctx):
    ops = {o["name"]: o for o in plain(top_ops(ctx))}
    assert ops["aten::mm"]["total_us"] == 580 and ops["aten::mm"]["calls"] == 2
    assert ops["record_param_comms"]["total_us"] == 250
    assert ops["aten::item"]["total_us"] == 50  # the DtoH copy it launched
    assert ops["aten::mm"]["share_pct"] == pytest.approx(100 * 580 / 1080)
    assert top_ops(ctx, 2)[0].name == "aten::mm" and len(top_ops(ctx, 2)) == 2


def test_top_kernels_and_classes(ctx):
    ks = {k["name"]: k for k in plain(top_kernels(ctx, 20))}
    ew = ks["void at::native::vectorized_elementwise_kernel<4>"]
    assert (ew["count"], ew["total_us"], ew["mean_us"], ew["class"]) == (2, 200, 100, "elementwise")
    assert ks["sm80_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x32"]["tensor_core"] is True
    assert ks["ampere_sgemm_128x64_nn"]["tensor_core"] is False  # fp32 SIMT GEMM
    cb = plain(class_breakdown(ctx))
    assert cb["tensor_core_pct"] == pytest.approx(100 * 280 / 780)
    assert {c["class"] for c in cb["classes"]} == {"gemm", "elementwise", "memcpy", "communication"}


def test_communication_overlap_hta_definition(ctx):
    c = plain(communication(ctx))
    assert c["union_us"] == 250 and c["overlap_us"] == 50
    assert c["overlap_pct"] == pytest.approx(20.0) and c["exposed_us"] == 200
    assert c["collectives"] == [{"collective": "all_reduce", "count": 1, "total_us": 250.0}]
    assert collective_of("ncclKernel_ReduceScatter_RING_LL_Sum_bfloat16") == "reduce_scatter"


def test_launch_stats(ctx):
    ls = plain(launch_stats(ctx))
    assert ls["linked_pct"] == 100.0 and ls["kernels"] == 5
    # launch → start delays: 50, 180, 30, 90, 240, 10
    assert ls["launch_to_start"]["p50_us"] == pytest.approx(70.0)
    assert ls["launch_to_start"]["mean_us"] == pytest.approx(100.0)
    assert ls["short_kernel_count_pct"] == 0.0


def test_interval_helpers_by_hand():
    s, e = np.array([0, 5, 20, 25.0]), np.array([10, 8, 30, 27.0])
    assert [list(x) for x in iv.union(s, e)] == [[0, 20], [10, 30]]
    assert iv.length(s, e) == 20
    assert [list(x) for x in iv.gaps(s, e, -5, 40)] == [[-5, 10, 30], [0, 20, 40]]
    assert iv.intersection_length((s, e), (np.array([9.0]), np.array([21.0]))) == 2
    assert list(iv.covered_within(s, e, np.array([0, 9, -10]), np.array([5, 21, 100]))) == [5, 2, 20]
    assert iv.length(np.zeros(0), np.zeros(0)) == 0


def test_attention_backends_counted_by_call(tmp_path):
    """Math-fallback and fused SDPA calls by op name (anchored: an op merely containing the
    name is neither), and the GPU time of kernels launched under the math op, by hand:
    math op A [0, 100) holds bmm [10, 40) whose launch at 20 starts a 30 µs kernel; math op
    B [200, 260) launches nothing; one flash op; a decoy name that is not aten's."""
    from tests.unit.analysis.test_critical_path import context, ev, kernel, launch

    from trainprof.analysis.timeline.host_work import attention_stats

    math_op, flash = "aten::_scaled_dot_product_attention_math", "aten::_scaled_dot_product_flash_attention"
    ctx = context(tmp_path, [
        ev(math_op, "cpu_op", 0, 100), ev("aten::bmm", "cpu_op", 10, 30), launch(20, 5, 1),
        kernel("volta_sgemm_128x64_nn", 50, 30, 1),
        ev(math_op, "cpu_op", 200, 60),
        ev(flash, "cpu_op", 300, 50), launch(310, 5, 2), kernel("flash_fwd_kernel", 320, 40, 2),
        ev("my::" + math_op, "cpu_op", 400, 10),
    ])
    a = plain(attention_stats(ctx))
    assert (a["math_calls"], a["fused_calls"], a["math_gpu_us"]) == (2, 1, 30.0)
