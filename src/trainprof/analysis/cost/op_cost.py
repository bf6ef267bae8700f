"""FLOPs and bytes of one call of an aten op, from the shapes a trace records.

`record_shapes=True` puts `Input Dims` and `Input type` (and `Concrete Inputs` for scalars)
on each cpu_op; that is enough to price the ops that dominate training time.

Conventions (docs/roofline.md):
* FLOPs are FLOPs, not MACs: a GEMM is 2·M·N·K. Attention counts the full T×T score
  matrix (no causal saving), forward 4·B·H·Tq·Tk·D, backward 2× forward, as in the FLOP
  counter (collect/flops.py), so per-op sums match the step's model FLOPs.
* Bytes are the *minimum* traffic: every operand read once and every result written once.
  Real kernels move more (re-reads that miss in cache, split-K workspaces), fused kernels
  less (intermediates that never reach DRAM): the achieved intensity is an upper bound.
* Element-wise FLOPs are nominal per-element costs (1 for add/mul, 8 for tanh-GELU, ...):
  they only place the op on the memory side, where FLOPs do not matter.
"""

from __future__ import annotations

from typing import Any, Callable

from trainprof.analysis.cost.conv_cost import CONV_OPS
from trainprof.analysis.cost.cost_common import (  # noqa: F401  (re-exported: the public cost API)
    DTYPE_NAME, ELEM_BYTES, Cost, _broadcast, _bytes, _is_tensor, _math_dtype, _tensor_args, numel)
from trainprof.vocab import matmul as mm
from trainprof.vocab.matmul import MATMUL_OPS


# ---- matrix products -------------------------------------------------------------
def _mm(dims, types, _c) -> Cost | None:
    ts = _tensor_args(dims, types)
    if len(ts) < 2:
        return None
    (a, ta), (b, tb) = ts[0], ts[1]
    if len(a) != 2 or len(b) != 2:
        return None
    m, k, n = a[0], a[1], b[1]
    return Cost(2 * m * n * k, _bytes(a, ta) + _bytes(b, tb) + m * n * ELEM_BYTES.get(ta, 4), _math_dtype(types))


def _addmm(dims, types, _c) -> Cost | None:
    ts = _tensor_args(dims, types)
    if len(ts) < 3:
        return None
    (bias, tbias), (a, ta), (b, tb) = ts[0], ts[1], ts[2]
    m, k, n = a[0], a[1], b[1]
    return Cost(2 * m * n * k, _bytes(bias, tbias) + _bytes(a, ta) + _bytes(b, tb) + m * n * ELEM_BYTES.get(ta, 4),
                _math_dtype(types))


def _bmm(dims, types, _c) -> Cost | None:
    ts = _tensor_args(dims, types)
    if len(ts) < 2 or len(ts[0][0]) != 3 or len(ts[1][0]) != 3:
        return None
    (a, ta), (b, tb) = ts[0], ts[1]
    bsz, m, k, n = a[0], a[1], a[2], b[2]
    return Cost(2 * bsz * m * n * k, _bytes(a, ta) + _bytes(b, tb) + bsz * m * n * ELEM_BYTES.get(ta, 4),
                _math_dtype(types))


def _baddbmm(dims, types, c) -> Cost | None:
    ts = _tensor_args(dims, types)
    if len(ts) < 3:
        return None
    inner = _bmm([list(ts[1][0]), list(ts[2][0])], [ts[1][1], ts[2][1]], c)
    return None if inner is None else Cost(inner.flops, inner.bytes + _bytes(*ts[0]), inner.dtype)


def _matmul(dims, types, _c) -> Cost | None:
    """aten::matmul / aten::linear when they are leaves (no child op recorded): batch dims
    of the first operand fold into M."""
    ts = _tensor_args(dims, types)
    if len(ts) < 2:
        return None
    (a, ta), (w, tw) = ts[0], ts[1]
    if len(a) < 2 or len(w) < 2:
        return None
    linear = len(w) == 2 and len(ts) >= 2 and a[-1] == w[1] and a[-1] != w[0]
    k = a[-1]
    n = w[0] if linear else w[-1]
    m = numel(a) // k
    extra = _bytes(*ts[2]) if len(ts) > 2 else 0
    return Cost(2 * m * n * k, _bytes(a, ta) + _bytes(w, tw) + extra + m * n * ELEM_BYTES.get(ta, 4),
                _math_dtype(types))


def _scaled_mm(dims, types, c) -> Cost | None:
    cost = _mm(dims, types, c)
    return None if cost is None else Cost(cost.flops, cost.bytes, "fp8")


def _operands(name: str, dims, types) -> tuple[tuple[tuple[int, ...], str], tuple[tuple[int, ...], str]] | None:
    """(A, B) as (shape, type) at the op's operand positions (vocab/matmul.py), or None."""
    op = MATMUL_OPS[name]
    if max(op.a, op.b) >= min(len(dims or ()), len(types or ())):
        return None
    a, b = (dims[op.a], types[op.a]), (dims[op.b], types[op.b])
    if not (_is_tensor(*a) and _is_tensor(*b)):
        return None
    return (tuple(a[0]), a[1]), (tuple(b[0]), b[1])


def _addbmm(dims, types, _c) -> Cost | None:
    """Σ_b A[b]·B[b] + input: the batch's products summed into one [M, N] result."""
    ab = _operands(mm.ADDBMM, dims, types)
    if ab is None or len(ab[0][0]) != 3 or len(ab[1][0]) != 3:
        return None
    (a, ta), (b, tb) = ab
    bsz, m, k, n = a[0], a[1], a[2], b[2]
    added = _bytes(dims[0], types[0]) if _is_tensor(dims[0], types[0]) else 0  # `input`, broadcast to [M, N]
    return Cost(2 * bsz * m * n * k, added + _bytes(a, ta) + _bytes(b, tb) + m * n * ELEM_BYTES.get(ta, 4),
                _math_dtype(types))


def _int_mm(dims, types, _c) -> Cost | None:
    """int8 A [M, K] · B [K, N] → int32 [M, N]."""
    ab = _operands(mm.INT_MM, dims, types)
    if ab is None or len(ab[0][0]) != 2 or len(ab[1][0]) != 2:
        return None
    (a, ta), (b, tb) = ab
    m, k, n = a[0], a[1], b[1]
    return Cost(2 * m * n * k, _bytes(a, ta) + _bytes(b, tb) + 4 * m * n, "int8")


def _grouped(name: str) -> Callable:
    """_grouped_mm / _scaled_grouped_mm (MoE experts: one GEMM per group, `offs` the groups'
    ends along one dim; torch/_meta_registrations.py _grouped_mm shape rules):
      3-D × 3-D  [G, M, K] · [G, K, N] → [G, M, N]   2·G·M·K·N
      2-D × 3-D  [M, K] · [G, K, N] → [M, N]         each row meets its group's B: 2·M·K·N
      3-D × 2-D  [G, M, K] · [K, N] → [M, N]         each column meets its group's A: 2·M·K·N
      2-D × 2-D  [M, K] · [K, N] → [G, M, N]         K split among the G groups: 2·M·K·N"""
    op = MATMUL_OPS[name]

    def cost(dims, types, _c) -> Cost | None:
        ab = _operands(name, dims, types)
        if ab is None:
            return None
        (a, ta), (b, tb) = ab
        if len(a) == 3 and len(b) == 3:
            flops, out = 2 * a[0] * a[1] * a[2] * b[2], a[0] * a[1] * b[2]
        elif len(a) == 2 and len(b) == 3:
            flops, out = 2 * a[0] * a[1] * b[2], a[0] * b[2]
        elif len(a) == 3 and len(b) == 2:
            flops, out = 2 * a[1] * a[2] * b[1], a[1] * b[1]
        elif len(a) == 2 and len(b) == 2:
            # G from offs: the 1-D int32 tensor after the operands
            g = next((d[0] for d, t in zip(dims[op.b + 1:], types[op.b + 1:])
                      if t == "int" and isinstance(d, (list, tuple)) and len(d) == 1 and isinstance(d[0], int)), None)
            if g is None:
                return None
            flops, out = 2 * a[0] * a[1] * b[1], g * a[0] * b[1]
        else:
            return None
        return Cost(flops, _bytes(a, ta) + _bytes(b, tb) + out * ELEM_BYTES.get(ta, 4), op.dtype or _math_dtype(types))
    return cost


# ---- attention --------------------------------------------------------------------
def _attn_shapes(dims, types):
    ts = _tensor_args(dims, types)
    q = [t for t in ts if len(t[0]) == 4]
    return q[:3] if len(q) >= 3 else None


def _sdpa_fwd(dims, types, _c) -> Cost | None:
    qkv = _attn_shapes(dims, types)
    if qkv is None:
        return None
    (q, tq), (k, tk), (v, tv) = qkv
    b, h, tq_, d = q
    tk_ = k[2]
    flops = 4 * b * h * tq_ * tk_ * d
    out = b * h * tq_ * v[3] * ELEM_BYTES.get(tq, 4)
    return Cost(flops, _bytes(q, tq) + _bytes(k, tk) + _bytes(v, tv) + out, _math_dtype(types))


def _sdpa_bwd(dims, types, _c) -> Cost | None:
    ts = [t for t in _tensor_args(dims, types) if len(t[0]) == 4]
    if len(ts) < 4:
        return None
    (q, tq), (k, tk), (v, tv) = ts[1], ts[2], ts[3]  # ts[0] is grad_out
    b, h, tq_, d = q
    flops = 2 * 4 * b * h * tq_ * k[2] * d
    read = sum(_bytes(*t) for t in ts)  # grad_out, q, k, v, out (+ logsumexp when 4-D)
    written = _bytes(q, tq) + _bytes(k, tk) + _bytes(v, tv)
    return Cost(flops, read + written, _math_dtype(types))


# ---- memory-bound families ------------------------------------------------------------
def _elementwise(per_elem: float) -> Callable:
    def cost(dims, types, _c) -> Cost | None:
        ts = _tensor_args(dims, types)
        if not ts:
            return None
        out = _broadcast([s for s, _ in ts])
        t_out = ts[0][1]
        read = sum(_bytes(s, t) for s, t in ts)
        return Cost(per_elem * numel(out), read + numel(out) * ELEM_BYTES.get(t_out, 4), _math_dtype(types))
    return cost


def _inplace(per_elem: float) -> Callable:
    """x.op_(y): reads every operand, writes x (no new output)."""
    def cost(dims, types, _c) -> Cost | None:
        ts = _tensor_args(dims, types)
        if not ts:
            return None
        return Cost(per_elem * numel(ts[0][0]), sum(_bytes(s, t) for s, t in ts) + _bytes(*ts[0]), _math_dtype(types))
    return cost


def _norm(per_elem: float) -> Callable:
    def cost(dims, types, _c) -> Cost | None:
        ts = _tensor_args(dims, types)
        if not ts:
            return None
        x, tx = ts[0]
        read = sum(_bytes(s, t) for s, t in ts)
        return Cost(per_elem * numel(x), read + _bytes(x, tx), _math_dtype(types))
    return cost


def _reduction(dims, types, _c) -> Cost | None:
    ts = _tensor_args(dims, types)
    if not ts:
        return None
    x, tx = ts[0]
    return Cost(numel(x), _bytes(x, tx) + ELEM_BYTES.get(tx, 4), _math_dtype(types))


def _copy(dims, types, _c) -> Cost | None:
    """A copy's dtype is its operands' (a copy_ of bf16 tensors is a bf16 point, not fp32)."""
    ts = _tensor_args(dims, types)
    if not ts:
        return None
    if len(ts) >= 2:  # copy_(dst, src): read src, write dst
        return Cost(0.0, _bytes(*ts[1]) + _bytes(*ts[0]), _math_dtype([t for _, t in ts]))
    return Cost(0.0, 2 * _bytes(*ts[0]), _math_dtype([ts[0][1]]))


def _embedding(dims, types, _c) -> Cost | None:
    ts = _tensor_args(dims, types)
    if len(ts) < 2:
        return None
    (w, tw), (idx, ti) = ts[0], ts[1]
    rows = numel(idx) * w[-1] * ELEM_BYTES.get(tw, 4)
    return Cost(0.0, _bytes(idx, ti) + 2 * rows, _math_dtype([tw]))


def _optimizer(per_elem: float, tensors_read: int, tensors_written: int) -> Callable:
    """Fused/foreach optimizer ops take TensorLists: price per parameter element."""
    def cost(dims, types, _c) -> Cost | None:
        if not dims or not isinstance(dims[0], (list, tuple)):
            return None
        first = dims[0]
        shapes = first if first and isinstance(first[0], (list, tuple)) else [first]
        n = sum(numel(s) for s in shapes)
        t = next((x for x in types if x in ELEM_BYTES), "float")
        return Cost(per_elem * n, (tensors_read + tensors_written) * n * ELEM_BYTES.get(t, 4), _math_dtype([t]))
    return cost


OPS: dict[str, Callable[[Any, Any, Any], Cost | None]] = {
    mm.MM: _mm, mm.ADDMM: _addmm, mm.BMM: _bmm, mm.BADDBMM: _baddbmm, mm.ADDBMM: _addbmm,
    mm.MATMUL: _matmul, mm.LINEAR: _matmul, mm.SCALED_MM: _scaled_mm, mm.INT_MM: _int_mm,
    mm.GROUPED_MM: _grouped(mm.GROUPED_MM), mm.SCALED_GROUPED_MM: _grouped(mm.SCALED_GROUPED_MM),
    "aten::_scaled_dot_product_flash_attention": _sdpa_fwd,
    "aten::_scaled_dot_product_efficient_attention": _sdpa_fwd,
    "aten::_scaled_dot_product_cudnn_attention": _sdpa_fwd,
    "aten::_scaled_dot_product_flash_attention_for_cpu": _sdpa_fwd,
    "aten::_flash_attention_forward": _sdpa_fwd, "aten::_efficient_attention_forward": _sdpa_fwd,
    "aten::_scaled_dot_product_flash_attention_backward": _sdpa_bwd,
    "aten::_scaled_dot_product_efficient_attention_backward": _sdpa_bwd,
    "aten::_scaled_dot_product_cudnn_attention_backward": _sdpa_bwd,
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": _sdpa_bwd,
    "aten::_flash_attention_backward": _sdpa_bwd, "aten::_efficient_attention_backward": _sdpa_bwd,
    **CONV_OPS,
    "aten::native_layer_norm": _norm(8), "aten::native_layer_norm_backward": _norm(10),
    "aten::layer_norm": _norm(8), "aten::_fused_rms_norm": _norm(4), "aten::rms_norm": _norm(4),
    "aten::native_batch_norm": _norm(8), "aten::cudnn_batch_norm": _norm(8),
    "aten::native_batch_norm_backward": _norm(10), "aten::cudnn_batch_norm_backward": _norm(10),
    "aten::_softmax": _norm(5), "aten::_log_softmax": _norm(5),
    "aten::_softmax_backward_data": _elementwise(3), "aten::_log_softmax_backward_data": _elementwise(3),
    "aten::nll_loss_forward": _reduction, "aten::nll_loss_backward": _elementwise(1),
    "aten::gelu": _elementwise(8), "aten::gelu_backward": _elementwise(12),
    "aten::silu": _elementwise(4), "aten::silu_backward": _elementwise(6),
    "aten::relu": _elementwise(1), "aten::threshold_backward": _elementwise(1),
    "aten::tanh": _elementwise(4), "aten::sigmoid": _elementwise(4), "aten::exp": _elementwise(1),
    "aten::add": _elementwise(1), "aten::sub": _elementwise(1), "aten::mul": _elementwise(1),
    "aten::div": _elementwise(1), "aten::where": _elementwise(1), "aten::pow": _elementwise(1),
    "aten::neg": _elementwise(1), "aten::rsqrt": _elementwise(1), "aten::sqrt": _elementwise(1),
    "aten::add_": _inplace(1), "aten::mul_": _inplace(1), "aten::div_": _inplace(1),
    "aten::sub_": _inplace(1), "aten::addcmul_": _inplace(2), "aten::addcdiv_": _inplace(2),
    "aten::lerp_": _inplace(2), "aten::masked_fill_": _inplace(1), "aten::clamp_": _inplace(1),
    "aten::sum": _reduction, "aten::mean": _reduction, "aten::amax": _reduction, "aten::max": _reduction,
    "aten::norm": _reduction, "aten::linalg_vector_norm": _reduction,
    "aten::copy_": _copy, "aten::_to_copy": _copy, "aten::clone": _copy, "aten::contiguous": _copy,
    "aten::embedding": _embedding, "aten::index_select": _embedding,
    "aten::embedding_dense_backward": _elementwise(1),
    "aten::_fused_adam_": _optimizer(12, 4, 3), "aten::_fused_adamw_": _optimizer(12, 4, 3),
    "aten::_foreach_add_": _optimizer(1, 2, 1), "aten::_foreach_mul_": _optimizer(1, 1, 1),
    "aten::_foreach_addcmul_": _optimizer(2, 3, 1), "aten::_foreach_addcdiv_": _optimizer(2, 3, 1),
    "aten::_foreach_lerp_": _optimizer(2, 2, 1), "aten::_foreach_sqrt": _optimizer(1, 1, 1),
    "aten::_foreach_div_": _optimizer(1, 2, 1), "aten::_foreach_sub_": _optimizer(1, 2, 1),
}


COPY_OPS = frozenset({"aten::copy_", "aten::_to_copy", "aten::clone", "aten::contiguous"})


def family(name: str) -> str:
    """Ops of one family price the same work at different levels of a call chain
    (aten::linear → aten::addmm, aten::layer_norm → aten::native_layer_norm), so only the
    innermost of a family is counted; different families nest freely (addmm → copy_)."""
    if name in MATMUL_OPS:
        return "matmul"
    if name in COPY_OPS:
        return "copy"
    for key in ("attention", "conv", "norm", "softmax", "nll_loss", "embedding", "foreach", "fused_adam"):
        if key in name:
            return key
    return name  # pointwise ops: their own family


def op_cost(name: str, dims: Any, types: Any, concrete: Any = None, out_dims: Any = None) -> Cost | None:
    """Cost of one call, or None when the op is unknown or its shapes are missing.
    `out_dims`: the output shape when known from elsewhere (a convolution whose trace lacks
    stride/padding prices exactly from it)."""
    fn = OPS.get(name)
    if fn is None or dims is None or types is None:
        return None
    try:
        if out_dims is not None and name in CONV_OPS:
            return fn(list(dims), list(types), concrete, out_dims=list(out_dims))
        return fn(list(dims), list(types), concrete)
    except (IndexError, TypeError, ValueError, ZeroDivisionError):
        return None  # unusual overloads: unpriced rather than wrong
