"""Fixes that fit the device (diagnose/device_advice.py): real analysed records (an MI300X
trace, a small NVIDIA trace whose device block is overlaid with a V100's), with the rule's
inputs overlaid so it fires. What each fix must and must not say is known from the device:
MI300X (CDNA3) has bf16 on its Matrix Cores; V100 (Volta) has fp16 Tensor Cores only. (The
real V100 and RTX 2080 Ti traces: tests/integration/test_device_identity.py.)"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from trainprof.diagnose import Thresholds, rules
from trainprof.diagnose.registry import RuleInput
from trainprof.recordtypes.analysis import Rank
from trainprof.recordtypes.base import as_struct

from tests.plain import plain
from tests.unit.diagnose.test_rules import with_peaks

REAL = Path(__file__).resolve().parents[2] / "data" / "traces" / "real"
MI300 = REAL / "tracelens_mi300_torch_compile_triton" / "trace.json.gz"
GP100 = REAL / "hta_small_edge_cases" / "step_based_trace_2543932.json.gz"  # 21 KB, Quadro GP100
TH = Thresholds()


@functools.lru_cache(maxsize=None)
def _record(path: Path) -> dict:
    from trainprof.analysis.trace_report import analyze_trace
    from trainprof.trace import read_trace

    return plain(analyze_trace(read_trace(path), file=str(path)))  # as the file holds it: the cases edit it


def _firing(path: Path, **device) -> Rank:
    """The record with 800 ms of GEMM kernels, 10 ms of them on Tensor Cores, and 24 SDPA
    calls on the math path: both rules fire whatever the trace held."""
    r = dict(_record(path))
    r["kernel_classes"] = [{"class": "gemm", "total_us": 800_000.0}, {"class": "elementwise", "total_us": 100_000.0}]
    r["matmul_us"], r["matmul_tensor_core_us"] = 800_000.0, 10_000.0
    # both spans: the rules divide work measured over every step by work_span_us (rules._span)
    r["idle_breakdown"] = {**r["idle_breakdown"], "span_us": 1_000_000.0, "work_span_us": 1_000_000.0}
    r["attention"] = {**r["attention"], "math_calls": 24, "fused_calls": 0, "math_gpu_us": 100_000.0}
    if device:
        r["device"] = {**r["device"], **device}
    return as_struct(r, Rank)


def test_amd_gets_rocm_names_and_bf16():
    rank = _firing(MI300)
    assert (rank.device.vendor, rank.device.arch, rank.device.bf16) == ("amd", "gfx942", True)
    f = rules.low_tensor_core(RuleInput(with_peaks(rank, {"fp32": 163.4, "bf16": 1307.4}), None, TH))
    assert "Matrix Cores" in f.title and "CUDA cores" not in f.title and "Matrix Cores" in f.evidence
    assert "torch.bfloat16" in f.fix and "hipBLASLt" in f.fix and "rocprof" in f.fix
    m = rules.math_attention(RuleInput(rank, None, TH))
    assert "ROCm" in m.fix and "AOTriton" in m.fix


def test_no_bf16_device_gets_fp16_and_a_grad_scaler():
    rank = _firing(GP100, name="Tesla V100-SXM2-32GB", vendor="nvidia", arch="sm_70", family="Volta",
                   bf16=False, tf32=False, tensor_cores=True)
    f = rules.low_tensor_core(RuleInput(with_peaks(rank, {"fp32": 15.7, "fp16": 125.0}), None, TH))
    # 790 ms of the 1,000 ms timeline off the Tensor Cores, × (1 − 15.7/125)
    assert f.estimated_gain_pct == pytest.approx(79.0 * (1 - 15.7 / 125.0), abs=0.01)
    assert "dtype=torch.float16" in f.fix and "GradScaler" in f.fix and "--dtype fp16" in f.fix
    assert "torch.bfloat16" not in f.fix and "allow_tf32" not in f.fix and "Tensor Cores" in f.title
    m = rules.math_attention(RuleInput(rank, None, TH))
    assert "fp16 inputs" in m.fix and "bf16/fp16" not in m.fix and "mem_efficient_sdp_enabled" in m.fix


def test_unknown_bf16_says_both_with_the_condition():
    rank = _firing(GP100, bf16=None, vendor="nvidia")
    f = rules.low_tensor_core(RuleInput(with_peaks(rank, {"fp32": 15.7, "fp16": 125.0}), None, TH))
    assert "compute capability ≥ 8.0" in f.fix and "torch.bfloat16" in f.fix and "GradScaler" in f.fix
