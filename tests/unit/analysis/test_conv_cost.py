"""Convolution FLOPs/bytes: recorded stride/padding, estimates when absent (said, never
silent), the backward (dgrad + wgrad, output_mask), and the roofline notes."""

import json

import torch
from torch.utils.flop_counter import FlopCounterMode

from trainprof.analysis.timeline.context import Context
from trainprof.analysis.cost.conv_cost import ASSUMED
from trainprof.analysis.cost.op_cost import op_cost
from trainprof.analysis.cost.roofline import Roof, dominant_dtype, roofline_points
from trainprof.recordtypes.roofline import RooflinePoint
from trainprof.trace import read_trace

from tests.plain import plain

STEM_X, STEM_W = [8, 3, 224, 224], [64, 3, 7, 7]
NO_ARGS = [""] * 9


def _flop_counter(fn) -> int:
    with FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_total_flops()


def test_recorded_stride_padding_dilation_groups_match_flop_counter():
    # grouped, dilated, strided: x [2, 8, 21, 21], w [12, 4, 3, 3] (groups 2), stride 2, pad 2, dil 2
    x, w = torch.randn(2, 8, 21, 21), torch.randn(12, 4, 3, 3)
    ref = _flop_counter(lambda: torch.nn.functional.conv2d(x, w, stride=2, padding=2, dilation=2, groups=2))
    c = op_cost("aten::conv2d", [[2, 8, 21, 21], [12, 4, 3, 3], [], [], [], [], []], ["float", "float", "", "ScalarList",
                "ScalarList", "ScalarList", "Scalar"], ["", "", "", "[2, 2]", "[2, 2]", "[2, 2]", "2"])
    # out = (21 + 4 - 2·2 - 1)//2 + 1 = 11; FLOPs = 2·(2·12·11·11)·4·9 = 209088
    assert c.flops == ref == 209088
    assert not c.estimated and c.assumption is None and c.dtype == "fp32"


def test_missing_stride_padding_is_an_estimate_that_says_so():
    # the ResNet stem, 7x7 stride 2 pad 3, recorded without Concrete Inputs
    c = op_cost("aten::convolution", [STEM_X, STEM_W, [64], [], [], [], [], [], []], ["c10::BFloat16"] * 3 + [""] * 6, NO_ARGS)
    assert c.estimated and c.assumption == ASSUMED
    # assumed output 224² instead of the true 112²: 4x the true count, and flagged as such
    assert c.flops == 2 * 8 * 64 * 224 * 224 * 3 * 49 and c.dtype == "bf16"
    exact = op_cost("aten::convolution", [STEM_X, STEM_W, [64], [], [], [], [], [], []], ["c10::BFloat16"] * 3 + [""] * 6,
                    ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"])
    assert exact.flops * 4 == c.flops and not exact.estimated


def test_output_shape_known_prices_exactly_without_stride():
    c = op_cost("aten::convolution", [STEM_X, STEM_W, [], [], [], [], [], [], []], ["float"] * 2 + [""] * 7, NO_ARGS,
                out_dims=[8, 64, 112, 112])
    assert c.flops == 2 * 8 * 64 * 112 * 112 * 3 * 49 and not c.estimated


def test_convolution_backward_is_dgrad_plus_wgrad_and_respects_output_mask():
    go, x, w = torch.randn(4, 16, 8, 8), torch.randn(4, 8, 16, 16), torch.randn(16, 8, 3, 3)
    args = dict(bias_sizes=None, stride=[2, 2], padding=[1, 1], dilation=[1, 1], transposed=False,
                output_padding=[0, 0], groups=1)
    both = _flop_counter(lambda: torch.ops.aten.convolution_backward(go, x, w, output_mask=[True, True, False], **args))
    wgrad = _flop_counter(lambda: torch.ops.aten.convolution_backward(go, x, w, output_mask=[False, True, False], **args))
    dims = [[4, 16, 8, 8], [4, 8, 16, 16], [16, 8, 3, 3], [], [], [], [], [], [], [], []]
    types = ["float"] * 3 + [""] * 8
    conc = ["", "", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    fwd = 2 * (4 * 16 * 8 * 8) * 8 * 9  # 589824
    c2 = op_cost("aten::convolution_backward", dims, types, conc + ["[True, True, False]"])
    c1 = op_cost("aten::convolution_backward", dims, types, conc + ["[False, True, True]"])  # first layer: no dgrad
    assert c2.flops == both == 2 * fwd
    assert c1.flops == wgrad == fwd
    # bytes: dgrad reads grad_out + w, writes grad_in; wgrad reads grad_out + x, writes grad_w
    go_b, x_b, w_b = 4 * 16 * 64 * 4, 4 * 8 * 256 * 4, 16 * 8 * 9 * 4
    assert c2.bytes == (go_b + w_b + x_b) + (go_b + x_b + w_b)
    assert c1.bytes == (go_b + x_b + w_b) + (go_b + 16 * 4)  # + the bias gradient's read/write


def test_cudnn_backward_overloads_are_priced():
    go, x, w = [4, 16, 8, 8], [4, 8, 16, 16], [16, 8, 3, 3]
    fwd = 2 * (4 * 16 * 8 * 8) * 8 * 9
    c = op_cost("aten::cudnn_convolution_backward", [x, go, w] + [[]] * 8, ["c10::Half"] * 3 + [""] * 8,
                ["", "", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False", "True", "[True, True]"])
    assert c.flops == 2 * fwd and c.dtype == "fp16"
    ci = op_cost("aten::cudnn_convolution_backward_input", [[], go, w] + [[]] * 7, ["ScalarList", "float", "float"] + [""] * 7,
                 ["[4, 8, 16, 16]"] + [""] * 9)
    cw = op_cost("aten::cudnn_convolution_backward_weight", [[], go, x] + [[]] * 7, ["ScalarList", "float", "float"] + [""] * 7,
                 ["[16, 8, 3, 3]"] + [""] * 9)
    assert ci.flops == cw.flops == fwd


def _trace(tmp_path, events, device="NVIDIA V100-SXM2-16GB"):
    base = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 5000}]
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": device}],
                             "traceEvents": base + events}))
    return read_trace(p)


def _op_with_kernel(name, ts, dims, types, kernel, kdur, corr, concrete=None):
    args = {"Input Dims": dims, "Input type": types}
    if concrete is not None:
        args["Concrete Inputs"] = concrete
    return [
        {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 100, "args": args},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 10, "dur": 5,
         "args": {"correlation": corr}},
        {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": ts + 200, "dur": kdur,
         "args": {"correlation": corr, "stream": 7, "device": 0}},
    ]


def test_roofline_takes_the_output_shape_from_the_backward_and_explains_points_above_the_roof(tmp_path):
    # 3x3 conv 64->64 on 56², batch 32, stride 1 pad 1, recorded WITHOUT Concrete Inputs; its
    # backward names the output shape. Forward FLOPs = 2·(32·64·56·56)·64·9 = 7.4e9; in
    # 100 µs that is 74 TFLOP/s, above a 15.7 TFLOP/s fp32 roof: Winograd did fewer multiplications.
    x, w, out = [32, 64, 56, 56], [64, 64, 3, 3], [32, 64, 56, 56]
    ev = _op_with_kernel("aten::cudnn_convolution", 100, [x, w, [], [], [], [], [], [], []], ["float"] * 2 + [""] * 7,
                         "void cudnn::winograd_nonfused::winogradForwardOutput4x4<float, float>(int)", 100, 1)
    ev += _op_with_kernel("aten::convolution_backward", 1000, [out, x, w] + [[]] * 8, ["float"] * 3 + [""] * 8,
                          "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int)", 2000, 2)
    ctx = Context.build(_trace(tmp_path, ev))
    pts = {p["name"]: p for p in plain(roofline_points(ctx, Roof({"fp32": 15.7}, 900.0, "test")))}
    fwd = pts["aten::cudnn_convolution"]
    assert fwd["flops"] == 2 * 32 * 64 * 56 * 56 * 64 * 9 and fwd["estimated"] is False
    assert fwd["roofline_pct"] > 100 and "Winograd" in fwd["note"]
    bwd = pts["aten::convolution_backward"]
    assert bwd["flops"] == 2 * fwd["flops"] and bwd["roofline_pct"] < 100
    assert fwd["class"] == bwd["class"] == "convolution"


def test_copies_do_not_pick_the_header_roof_and_carry_their_dtype():
    def pt(dtype, flops, us):
        return RooflinePoint(name="x", count=1, device_time_us=us, flops=flops, bytes=1.0, intensity=flops,
                             achieved_tflops=0.0, dtype=dtype)

    pts = [pt("bf16", 0.0, 900.0),  # bf16 copy_: long but no math
           pt("bf16", 1e9, 100.0), pt("fp32", 1e6, 50.0)]
    assert dominant_dtype(pts) == "bf16"
    pts[0] = pt("fp32", 0.0, 900.0)
    assert dominant_dtype(pts) == "bf16"  # the 900 µs fp32 copy does not make the roof fp32
    c = op_cost("aten::copy_", [[100], [100], []], ["c10::BFloat16", "c10::BFloat16", "Scalar"])
    assert c.dtype == "bf16" and c.flops == 0


def test_missing_shapes_estimate_reaches_the_point(tmp_path):
    x, w = [8, 3, 224, 224], [64, 3, 7, 7]
    ev = _op_with_kernel("aten::cudnn_convolution", 100, [x, w, [], [], [], [], [], [], []], ["float"] * 2 + [""] * 7,
                         "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_kernel", 5000, 1)
    ctx = Context.build(_trace(tmp_path, ev, "NVIDIA A100-SXM4-80GB"))
    (p,) = plain(roofline_points(ctx, Roof({"fp32": 19.5, "tf32": 156.0}, 2039.0, "test")))
    assert p["estimated"] is True and p["note"] == ASSUMED
    assert p["tensor_core"] is True and p["dtype"] == "tf32"
