"""Tensor Core use of Triton kernels, which their names rarely state (`matmul_kernel`,
`triton_tem_fused_mm_0`, AOTriton's `attn_fwd`): read from the trace around them.

Triton's `tl.dot` is lowered to MMA (mma.sync/wgmma on NVIDIA, MFMA on AMD) whenever its
operands are 16-bit or narrower (fp16, bf16, fp8, int8, fp4); fp32 operands are not counted
(Triton would use TF32 only when asked, and Inductor asks only under allow_tf32). So a
kernel counts as a Tensor Core kernel when all three hold:
  * it is a Triton kernel: named `triton_*` (Inductor), or launched through the driver API
    as Triton's launcher does (cuLaunchKernel/cuLaunchKernelEx; hipModuleLaunchKernel on
    ROCm, where hipBLASLt uses hipExtModuleLaunchKernel);
  * it does matrix math: its class is gemm/attention (its name says matmul/mm/bmm/gemm/attn),
    or its name has a `dot` token, or it was launched under a matmul-like op (MATMUL_OPS),
    for which it is that op's math: its class becomes gemm (attention under an SDPA op);
    Inductor's pointwise/reduction kernels (class `triton`) and every other class never;
  * its operands are ≤ 16-bit: by its name (bf16, fp16, fp8, e4m3, mxfp4, int8), else by the
    recorded input types of that op (record_shapes). Unknown dtypes do not count.
Cost: numpy over the kernel rows, Python only per distinct (name, op types) candidate.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from trainprof import namematch
from trainprof.trace.classify import RowClasses, tokens
from trainprof.trace.ids import distinct
from trainprof.trace.kinds import Kind
from trainprof.trace.links import Links
from trainprof.trace.tables import Trace
from trainprof.vocab.matmul import MATMUL_OPS

LAUNCHERS = ("cuLaunchKernel", "cuLaunchKernelEx", "hipModuleLaunchKernel")
# op -> positions of its matrix operands among the recorded input types (vocab/matmul.py)
MATMUL_POS = {name: (op.a, op.b) for name, op in MATMUL_OPS.items()}
# SDPA and its kernels' ops: q, k, v (grad_out, q, k in a backward) share the dtype
ATTENTION_OPS = dict.fromkeys((
    "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention", "aten::_flash_attention_forward",
    "aten::_flash_attention_backward", "aten::_efficient_attention_forward",
    "aten::_efficient_attention_backward"), (0, 1, 2))
NARROW_TYPES = frozenset({"c10::BFloat16", "c10::Half", "c10::Float8_e4m3fn", "c10::Float8_e5m2",
                          "c10::Float8_e4m3fnuz", "c10::Float8_e5m2fnuz", "c10::Float8_e8m0fnu",
                          "c10::Float4_e2m1fn_x2", "signed char", "unsigned char"})
# dtype tokens in a kernel name, glued or not: bf16xbf16xmxfp4, fp8e4m3, _f16_
_NARROW_NAME = namematch.compile(r"(bf16|fp16|f16|half|fp8|e4m3|e5m2|mxfp\d|nvfp4|fp4|int8)(?:[^0-9]|$)", ignorecase=True)
_DEPTH = 8  # op nesting walked up from the launching op (a custom op around aten::mm: 2-3)


def triton_tensor_core(trace: Trace, links: Links, classes: RowClasses) -> RowClasses:
    """`classes` with the Triton kernels that use Tensor Cores marked (and reclassed)."""
    names = classes.names
    k = np.flatnonzero((trace.kind == Kind.KERNEL) & ~classes.tensor_core)
    if not len(k):
        return classes
    gemm, attn = names.index("gemm"), names.index("attention")
    open_ids = [names.index(n) for n in ("gemm", "attention", "other")]
    k = k[np.isin(classes.class_id[k], open_ids)]
    triton = _is_triton(trace, links, k)
    k = k[triton]
    if not len(k):
        return classes
    op_row, op_cls = _matmul_op(trace, links, k, gemm, attn)
    cls = classes.class_id[k]
    dot = np.array([" dot " in f" {tokens(trace.names[i])} " for i in trace.name_id[k]], dtype=bool) \
        if (cls != gemm).any() else np.zeros(len(k), dtype=bool)
    mathy = np.isin(cls, [gemm, attn]) | dot | (op_row >= 0)
    new_cls = np.where(np.isin(cls, [gemm, attn]), cls, np.where(op_cls >= 0, op_cls, gemm))
    narrow = _narrow(trace, k, op_row)
    hit = mathy & narrow
    if not hit.any():
        return classes
    tc, cid = classes.tensor_core.copy(), classes.class_id.copy()
    tc[k[hit]] = True
    cid[k[hit]] = new_cls[hit].astype(cid.dtype)
    return replace(classes, class_id=cid, tensor_core=tc)


def _is_triton(trace: Trace, links: Links, rows: np.ndarray) -> np.ndarray:
    ids = distinct(trace.name_id[rows], len(trace.names))
    by_name = np.zeros(len(trace.names), dtype=bool)
    by_name[ids] = [trace.names[i].startswith("triton") for i in ids]
    launch = links.launch[rows]
    launchers = trace.name_ids(*LAUNCHERS)
    launched = (launch >= 0) & np.isin(trace.name_id[np.maximum(launch, 0)], launchers)
    return by_name[trace.name_id[rows]] | launched


def _matmul_op(trace: Trace, links: Links, rows: np.ndarray, gemm: int, attn: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the nearest enclosing matmul-like op (-1: none) and the class it implies."""
    kind_of = np.full(len(trace.names), -1, dtype=np.int64)
    kind_of[trace.name_ids(*MATMUL_OPS)] = gemm
    kind_of[trace.name_ids(*ATTENTION_OPS)] = attn
    found = np.full(len(rows), -1, dtype=np.int64)
    cls = np.full(len(rows), -1, dtype=np.int64)
    if not (kind_of >= 0).any():
        return found, cls
    op = links.op[rows].copy()
    for _ in range(_DEPTH):
        live = (op >= 0) & (found < 0)
        if not live.any():
            break
        hit = live.copy()
        hit[live] = kind_of[trace.name_id[op[live]]] >= 0
        found[hit], cls[hit] = op[hit], kind_of[trace.name_id[op[hit]]]
        step = live & ~hit
        op[step] = links.op_parent[op[step]]
        op[~step] = -1
    return found, cls


def _narrow(trace: Trace, rows: np.ndarray, op_row: np.ndarray) -> np.ndarray:
    """Per row: the operands are ≤ 16-bit, by the kernel's name or the op's input types."""
    memo: dict[tuple[int, int], bool] = {}
    out = np.zeros(len(rows), dtype=bool)
    for j, (nid, op) in enumerate(zip(trace.name_id[rows].tolist(), op_row.tolist())):
        key = (nid, int(trace.types_id[op]) if op >= 0 else -1)
        if key not in memo:
            memo[key] = bool(_NARROW_NAME.search(trace.names[nid])) or (op >= 0 and _narrow_types(trace, op))
        out[j] = memo[key]
    return out


def _narrow_types(trace: Trace, op: int) -> bool:
    types = trace.arg(trace.types_id, op) or ()
    name = trace.name(op)
    pos = MATMUL_POS.get(name) or ATTENTION_OPS.get(name) or ()
    operands = [types[i] for i in pos if i < len(types)]
    return bool(operands) and all(t in NARROW_TYPES for t in operands)
