"""FLOPs/bytes from shapes (by hand and against FlopCounterMode) and the roofline model."""

from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from trainprof.analysis.timeline.context import Context
from trainprof.analysis.cost.op_cost import family, op_cost
from trainprof.analysis.cost.roofline import Roof, dominant_dtype, roofline_header, roofline_points
from trainprof.trace import read_trace

from tests.plain import plain

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"
REAL = Path(__file__).resolve().parents[2] / "data" / "traces" / "real"


def test_gemm_by_hand():
    c = op_cost("aten::mm", [[64, 128], [128, 256]], ["float", "float"])
    assert c.flops == 2 * 64 * 256 * 128
    assert c.bytes == (64 * 128 + 128 * 256 + 64 * 256) * 4  # read A, B; write C, once each
    assert c.dtype == "fp32"
    c = op_cost("aten::addmm", [[256], [64, 128], [128, 256], [], []], ["c10::BFloat16"] * 3 + ["Scalar"] * 2)
    assert c.flops == 2 * 64 * 256 * 128 and c.dtype == "bf16"
    assert c.bytes == (256 + 64 * 128 + 128 * 256 + 64 * 256) * 2
    c = op_cost("aten::bmm", [[8, 32, 16], [8, 16, 64]], ["c10::Half"] * 2)
    assert c.flops == 2 * 8 * 32 * 64 * 16 and c.dtype == "fp16"
    c = op_cost("aten::linear", [[4, 10, 32], [48, 32], [48]], ["float"] * 3)
    assert c.flops == 2 * 40 * 48 * 32


@pytest.mark.parametrize("m,k,n", [(7, 13, 5), (128, 64, 256), (1, 4096, 1)])
def test_gemm_flops_match_flopcountermode(m, k, n):
    a, b = torch.randn(m, k), torch.randn(k, n)
    with FlopCounterMode(display=False) as fc:
        torch.mm(a, b)
    assert op_cost("aten::mm", [[m, k], [k, n]], ["float", "float"]).flops == fc.get_total_flops()
    x, w, bias = torch.randn(3, m, k), torch.randn(n, k), torch.randn(n)
    with FlopCounterMode(display=False) as fc:
        torch.nn.functional.linear(x, w, bias)
    assert op_cost("aten::linear", [[3, m, k], [n, k], [n]], ["float"] * 3).flops == fc.get_total_flops()


def test_attention_and_conv_by_hand():
    q = [2, 4, 128, 64]
    f = op_cost("aten::_scaled_dot_product_flash_attention", [q, q, q, [], []], ["c10::BFloat16"] * 3 + ["Scalar"] * 2)
    assert f.flops == 4 * 2 * 4 * 128 * 128 * 64  # full T×T, no causal saving
    assert f.bytes == 4 * (2 * 4 * 128 * 64) * 2  # q, k, v read, out written
    b = op_cost("aten::_scaled_dot_product_flash_attention_backward", [q, q, q, q, q, [2, 4, 128]], ["c10::BFloat16"] * 5 + ["float"])
    assert b.flops == 2 * f.flops
    # 7x7 stride-2 pad-3 stem conv on 224²: out 112²
    c = op_cost("aten::convolution", [[8, 3, 224, 224], [64, 3, 7, 7], [64], [], [], [], [], [], []],
                ["float"] * 3 + [""] * 6, ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"])
    assert c.flops == 2 * 8 * 64 * 112 * 112 * 3 * 49
    x = torch.randn(2, 3, 20, 20)
    w = torch.randn(5, 3, 3, 3)
    with FlopCounterMode(display=False) as fc:
        torch.nn.functional.conv2d(x, w, stride=2, padding=1)
    cc = op_cost("aten::convolution", [[2, 3, 20, 20], [5, 3, 3, 3], [], [], [], [], [], [], []], ["float"] * 2 + [""] * 7,
                 ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])
    assert cc.flops == fc.get_total_flops()


def test_memory_bound_families_by_hand():
    c = op_cost("aten::add", [[4, 64, 256], [64, 256], []], ["float", "float", "Scalar"])
    out = 4 * 64 * 256
    assert c.flops == out and c.bytes == (out + 64 * 256 + out) * 4  # broadcast operand read once
    c = op_cost("aten::copy_", [[100], [100], []], ["c10::BFloat16", "float", "Scalar"])
    assert c.flops == 0 and c.bytes == 100 * 4 + 100 * 2
    c = op_cost("aten::native_layer_norm", [[8, 512], [], [512], [512], []], ["float", "ScalarList", "float", "float", "Scalar"])
    assert c.bytes == (8 * 512 + 512 + 512) * 4 + 8 * 512 * 4
    assert op_cost("aten::nonexistent", [[1]], ["float"]) is None
    assert op_cost("aten::mm", None, None) is None
    assert family("aten::linear") == family("aten::addmm") != family("aten::copy_")


def test_roofline_model_on_the_hand_written_trace():
    # bf16 gemm 64x128 @ 128x256 in 280 µs; fp32 gemm in 300 µs. A100 roofs.
    ctx = Context.build(read_trace(DATA / "idle_causes.json"))
    roof = Roof({"fp32": 19.5, "tf32": 156.0, "bf16": 312.0}, 2039.0, "test")
    pts = {p["dtype"]: p for p in plain(roofline_points(ctx, roof)) if p["name"] == "aten::mm"}
    bf = pts["bf16"]
    flops, nbytes = 2 * 64 * 256 * 128, (64 * 128 + 128 * 256 + 64 * 256) * 2
    assert bf["flops"] == flops and bf["bytes"] == nbytes and bf["count"] == 1
    assert bf["intensity"] == pytest.approx(flops / nbytes)
    assert bf["achieved_tflops"] == pytest.approx(flops / 280e-6 / 1e12)
    assert bf["attainable_tflops"] == pytest.approx(min(312.0, flops / nbytes * 2039.0 / 1e3))
    assert bf["roofline_pct"] == pytest.approx(100 * bf["achieved_tflops"] / bf["attainable_tflops"])
    assert bf["bound"] == "latency"  # a tiny GEMM far below both roofs
    assert pts["fp32"]["tensor_core"] is False and bf["tensor_core"] is True
    h = roofline_header(roof, dominant_dtype(roofline_points(ctx, roof)))
    assert h.dtype == "fp32" and h.ridge_flop_per_byte == pytest.approx(19.5e3 / 2039.0)


def test_unknown_roofs_leave_bounds_empty():
    ctx = Context.build(read_trace(DATA / "idle_causes.json"))
    pts = plain(roofline_points(ctx, Roof({}, None, "unknown")))
    assert pts and all(p["bound"] is None and p["intensity"] > 0 for p in pts)


def test_h100_qwen_projection_gemms_compute_bound_elementwise_memory_bound():
    from trainprof.jobs.analyze import resolve_roof
    from trainprof.hardware.peaks import PeakOverrides

    trace = read_trace(REAL / "tracelens_h100_hf_inference" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    roof = resolve_roof(trace.device_name, PeakOverrides())
    assert roof.source == "datasheet:h100-sxm"
    pts = plain(roofline_points(Context.build(trace), roof, top_k=20))
    gemms = [p for p in pts if p["name"] in ("aten::mm", "aten::addmm") and p["device_time_us"] > 1000]
    assert gemms and all(p["bound"] == "compute" and p["intensity"] > 295 for p in gemms)
    ew = [p for p in pts if p["name"] in ("aten::mul", "aten::add", "aten::pow")]
    ridge = 989.4e3 / 3350
    assert ew and all(p["intensity"] < ridge / 100 for p in ew)  # far on the memory side
    assert all(p["bound"] == "memory" for p in ew if p["device_time_us"] > 1000)
