"""Eager attention (matmul → softmax → matmul) found on any trace by op order and shapes, and
the math_attention finding it raises; a real CPU trace recorded here with torch.profiler."""

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from trainprof.analysis.timeline.context import Context
from trainprof.analysis.timeline.attention_pattern import eager_attention
from trainprof.analysis.trace_report import analyze_trace
from trainprof.diagnose import diagnose_rank
from trainprof.trace import read_trace

REAL = Path(__file__).resolve().parents[2] / "data" / "traces" / "real"


class Attn(torch.nn.Module):
    def __init__(self, fused: bool, d: int = 64, heads: int = 4):
        super().__init__()
        self.fused, self.h = fused, heads
        self.qkv = torch.nn.Linear(d, 3 * d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in self.qkv(x).chunk(3, dim=-1))
        if self.fused:
            return F.scaled_dot_product_attention(q, k, v)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.h)  # [b, h, t, t]
        return scores.softmax(dim=-1) @ v


def _profile(tmp_path, fused: bool):
    model, x = Attn(fused), torch.randn(2, 128, 64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(3):
            with torch.profiler.record_function("ProfilerStep#0"):
                model(x)
    path = tmp_path / f"attn_{fused}.json"
    prof.export_chrome_trace(str(path))
    return read_trace(path)


def test_hand_written_attention_is_found_and_flagged(tmp_path):
    trace = _profile(tmp_path, fused=False)
    ea = eager_attention(Context.build(trace))
    # three forward calls, one block each: q [2,4,128,16] @ kᵀ [2,4,16,128] → softmax → @ v [2,4,128,16]
    assert ea["blocks"] == 3 and ea["by_shape"] is True and ea["time_kind"] == "host"
    assert ea["example"]["first_dims"][:2] == [[2, 4, 128, 16], [2, 4, 16, 128]]
    assert ea["example"]["second_dims"][:2] == [[2, 4, 128, 128], [2, 4, 128, 16]]
    rank = analyze_trace(trace, file="attn.json")
    (f,) = [f for f in diagnose_rank(rank) if f.id == "math_attention"]
    assert "scaled_dot_product_attention" in f.fix and "3 hand-written attention blocks" in f.evidence


def test_sdpa_model_has_no_eager_block(tmp_path):
    trace = _profile(tmp_path, fused=True)
    assert eager_attention(Context.build(trace))["blocks"] == 0
    assert not [f for f in diagnose_rank(analyze_trace(trace, file="sdpa.json")) if f.id == "math_attention"]


@pytest.mark.parametrize("path", ["hta_recsys_128rank_nccl_a100/sampled_rank-0.json.gz",
                                  "tracelens_h100_hf_inference/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"])
def test_no_false_attention_on_real_traces(path):
    # recsys: softmax([2, 1]) then matmul([2048, 2], [2, 1]) — a gating softmax, not attention;
    # Qwen runs SDPA
    assert eager_attention(Context.build(read_trace(REAL / path)))["blocks"] == 0


def test_gpu_time_of_a_block_is_its_kernels(tmp_path):
    import json

    q, kt, s, v = [8, 12, 577, 64], [8, 12, 64, 577], [8, 12, 577, 577], [8, 12, 577, 64]
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 2000}]

    def op(name, ts, dims, corr, kname, kts, kdur):
        return [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 30,
                 "args": {"Input Dims": dims, "Input type": ["float"] * len(dims)}},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 5,
                 "dur": 5, "args": {"correlation": corr}},
                {"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": 7, "ts": kts, "dur": kdur,
                 "args": {"correlation": corr, "stream": 7, "device": 0}}]
    ev += op("aten::matmul", 100, [q, kt], 1, "volta_sgemm_128x64_nn", 200, 300)      # scores
    ev += op("aten::div", 140, [s, []], 2, "void at::native::vectorized_elementwise_kernel<4>()", 500, 50)
    ev += op("aten::softmax", 180, [s, [], []], 3, "void (anonymous namespace)::softmax_warp_forward<float>()", 550, 100)
    ev += op("aten::matmul", 220, [s, v], 4, "volta_sgemm_128x64_nn", 650, 250)       # output
    ev += op("aten::linear", 400, [[8, 577, 768], [768, 768]], 5, "volta_sgemm_128x64_nn", 900, 1000)
    p = tmp_path / "vit.json"
    p.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 PCIe"}],
                             "traceEvents": ev}))
    ea = eager_attention(Context.build(read_trace(p)))
    # kernels launched between the first matmul's start (100) and the second's end (250):
    # 300 + 50 + 100 + 250 = 700 µs; the linear's 1000 µs kernel is outside the block
    assert ea["blocks"] == 1 and ea["time_us"] == 700.0 and ea["time_kind"] == "gpu"
    rank = analyze_trace(read_trace(p), file="vit.json")
    (f,) = [f for f in diagnose_rank(rank) if f.id == "math_attention"]
    # GPU span 200 → 1900 = 1700 µs; 700/1700 = 41.2%; gain bound = half
    assert f.estimated_gain_pct == pytest.approx(0.5 * 100 * 700 / 1700, abs=0.01)
