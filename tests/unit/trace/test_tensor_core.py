"""Tensor Cores for Triton kernels (trace/tensor_core.py), planted on a real trace: the
MI300X torch.compile trace (tests/data/traces/real/SOURCES.md #23) has 7 hipBLASLt GEMMs
under bf16 aten::mm (8,029.555 µs together), AOTriton's attn_fwd under a bf16
_flash_attention_forward (3,683.509 µs, launched by hipModuleLaunchKernel, Triton's HIP
launcher) and 4 Inductor pointwise/reduction kernels. Editing the GEMMs into Triton-style
kernels gives answers known before the code runs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from trainprof.analysis.timeline.context import Context
from trainprof.analysis.timeline.ops import class_breakdown
from trainprof.trace import read_trace

from tests.plain import plain

TRACE = Path(__file__).resolve().parents[2] / "data" / "traces" / "real" / "tracelens_mi300_torch_compile_triton" \
    / "trace.json.gz"
GEMMS_US = 597.526 + 557.346 + 564.477 + 527.342 + 1775.035 + 1974.13 + 2033.699  # = 8,029.555
ATTN_US = 3683.509


def _run(tmp_path: Path, kernel: str | None = None, mm_types: list | None = None, mm_name: str | None = None):
    """The trace with its Cijk GEMMs renamed `kernel` and launched the way Triton launches
    (hipModuleLaunchKernel), aten::mm's input types / name replaced; its context."""
    d = json.loads(gzip.decompress(TRACE.read_bytes()))
    for e in d["traceEvents"]:
        if kernel and e.get("cat") == "kernel" and e["name"].startswith("Cijk_"):
            e["name"] = kernel
        if kernel and e.get("name") == "hipExtModuleLaunchKernel":
            e["name"] = "hipModuleLaunchKernel"
        if e.get("name") == "aten::mm":
            if mm_types is not None:
                e["args"]["Input type"] = mm_types
            if mm_name is not None:
                e["name"] = mm_name
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(json.dumps(d).encode()))
    ctx = Context.build(read_trace(p))
    return ctx, plain(class_breakdown(ctx))


def _pointwise_never_tc(ctx) -> None:
    t = ctx.trace
    rows = [r for r in ctx.kernels if t.name(r).startswith("triton_")]
    assert len(rows) == 4 and all(ctx.class_name(r) == "triton" and not ctx.classes.tensor_core[r] for r in rows)


def test_real_trace_attn_fwd_under_bf16_sdpa_uses_matrix_cores(tmp_path):
    ctx, cb = _run(tmp_path)
    # hipBLASLt GEMMs by name (MI16x16x1 MFMA tile), attn_fwd by its bf16 SDPA op: all matmul time
    assert cb["matmul_us"] == pytest.approx(GEMMS_US + ATTN_US)
    assert cb["matmul_tensor_core_us"] == pytest.approx(GEMMS_US + ATTN_US)
    _pointwise_never_tc(ctx)


def test_triton_matmul_under_bf16_mm_is_tensor_core_and_fp32_is_not(tmp_path):
    ctx, cb = _run(tmp_path, kernel="matmul_kernel")
    assert cb["matmul_tensor_core_us"] == pytest.approx(GEMMS_US + ATTN_US)  # bf16 operands: MMA
    _pointwise_never_tc(ctx)
    _, cb = _run(tmp_path, kernel="matmul_kernel", mm_types=["float", "float", "float"])
    assert cb["matmul_us"] == pytest.approx(GEMMS_US + ATTN_US)
    assert cb["matmul_tensor_core_us"] == pytest.approx(ATTN_US)  # fp32 operands: CUDA-core tl.dot


def test_an_opaque_triton_kernel_under_mm_is_that_mm_s_gemm(tmp_path):
    ctx, cb = _run(tmp_path, kernel="kernel_0")  # a name that says nothing: class "other" by name
    rows = [r for r in ctx.kernels if ctx.trace.name(r) == "kernel_0"]
    assert len(rows) == 7 and all(ctx.class_name(r) == "gemm" and ctx.classes.tensor_core[r] for r in rows)
    assert cb["matmul_tensor_core_us"] == pytest.approx(GEMMS_US + ATTN_US)


def test_without_a_matmul_op_the_name_must_say_matmul_and_its_dtype(tmp_path):
    # aten::mm renamed away: no op gives the dtype; a bare matmul_kernel stays unknown (not TC)
    _, cb = _run(tmp_path, kernel="matmul_kernel", mm_name="mylib::fused")
    assert cb["matmul_tensor_core_us"] == pytest.approx(ATTN_US)
    # triton_kernels-style names carry their dtypes: bf16 x mxfp4 operands run on MMA
    _, cb = _run(tmp_path, kernel="_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1", mm_name="mylib::fused")
    assert cb["matmul_tensor_core_us"] == pytest.approx(GEMMS_US + ATTN_US)
    # a tl.dot kernel named for it: `dot` + bf16 in the name
    ctx, cb = _run(tmp_path, kernel="_fwd_kernel_dot_bf16", mm_name="mylib::fused")
    assert cb["matmul_tensor_core_us"] == pytest.approx(GEMMS_US + ATTN_US)
    assert {ctx.class_name(r) for r in ctx.kernels if ctx.trace.name(r) == "_fwd_kernel_dot_bf16"} == {"gemm"}
