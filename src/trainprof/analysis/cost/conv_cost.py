"""FLOPs and bytes of convolutions, forward and backward, from the shapes a trace records.

Direct-convolution count (FLOPs, not MACs), weight = [K, C/groups, *kernel]:

    forward  = 2 · numel(output) · C/groups · prod(kernel)
    dgrad    = forward   (grad_input:  grad_output ⋆ weight)
    wgrad    = forward   (grad_weight: grad_output ⋆ input)

so a backward that computes both gradients costs 2× the forward; `output_mask` (recorded in
`Concrete Inputs`) says which gradients were asked for — the first layer of a network needs
no grad_input. The count is the *direct* algorithm's: cuDNN's Winograd and FFT algorithms
do fewer multiplications (Winograd F(4×4, 3×3) ~4× fewer), so their achieved FLOP/s by this
count can exceed the device peak (roofline.py notes it).

The forward's output size needs stride, padding and dilation. They are read from `Concrete
Inputs` (PyTorch records them with `record_shapes=True`); when a trace lacks them, the output
shape is taken from elsewhere when known (roofline.py: the matching convolution_backward's
grad_output), otherwise stride 1 and "same" padding are assumed and the Cost says so
(`estimated`, `assumption`): never silently.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from trainprof.analysis.cost.cost_common import ELEM_BYTES, Cost, _bytes, _math_dtype, _tensor_args, numel

ASSUMED = "stride/padding/dilation not recorded: assumed stride 1, padding same (output size = input size)"


def conv_out(x: int, k: int, stride: int, pad: int, dil: int) -> int:
    return (x + 2 * pad - dil * (k - 1) - 1) // stride + 1


def _ints(s: Any, n: int, default: int) -> list[int]:
    vals = [int(v) for v in re.findall(r"-?\d+", str(s))]
    if not vals:
        return [default] * n
    return (vals * n)[:n] if len(vals) < n else vals[:n]


def _mask(s: Any, n: int) -> list[bool]:
    """`output_mask` as recorded ("[True, True, False]"); all True when absent."""
    vals = re.findall(r"true|false|1|0", str(s).lower())
    if len(vals) < 2:
        return [True] * n
    return [v in ("true", "1") for v in vals[:n]] + [True] * (n - len(vals))


def _arg(concrete: Sequence | None, i: int) -> str:
    c = list(concrete or [])
    return str(c[i]) if i < len(c) and c[i] not in (None, "") else ""


def _direct_flops(out: Sequence[int], w: Sequence[int]) -> float:
    # w[1] = C/groups for every groups value, so groups is not needed
    return 2.0 * numel(out) * w[1] * numel(w[2:])


# Positions of (stride, padding, dilation) in each forward overload's arguments.
FORWARD_ARGS = {
    "aten::convolution": (3, 4, 5), "aten::_convolution": (3, 4, 5), "aten::conv2d": (3, 4, 5),
    "aten::conv1d": (3, 4, 5), "aten::conv3d": (3, 4, 5),
    "aten::cudnn_convolution": (3, 2, 4),
    "aten::mkldnn_convolution": (4, 3, 5), "aten::miopen_convolution": (4, 3, 5),
}


def _forward(name: str) -> Callable:
    i_stride, i_pad, i_dil = FORWARD_ARGS[name]

    def cost(dims, types, concrete, out_dims: Sequence[int] | None = None) -> Cost | None:
        ts = _tensor_args(dims, types)
        if len(ts) < 2 or len(ts[0][0]) < 3:
            return None
        (x, tx), (w, tw) = ts[0], ts[1]
        nsp = len(x) - 2
        raw = [_arg(concrete, i) for i in (i_stride, i_pad, i_dil)]
        estimated, assumption = False, None
        if any(raw):
            stride, pad, dil = _ints(raw[0], nsp, 1), _ints(raw[1], nsp, 0), _ints(raw[2], nsp, 1)
            out = (x[0], w[0], *(conv_out(x[2 + i], w[2 + i], stride[i], pad[i], dil[i]) for i in range(nsp)))
        elif out_dims is not None and len(out_dims) == len(x):
            out = tuple(out_dims)  # the FLOPs need only the output size
        else:
            out = (x[0], w[0], *x[2:])
            estimated, assumption = True, ASSUMED
        flops = _direct_flops(out, w)
        extra = _bytes(*ts[2]) if len(ts) > 2 and len(ts[2][0]) == 1 else 0  # bias
        nbytes = _bytes(x, tx) + _bytes(w, tw) + extra + numel(out) * ELEM_BYTES.get(tx, 4)
        return Cost(flops, nbytes, _math_dtype(types), estimated, assumption)
    return cost


def _grads(go, tgo, x_shape, tx, w, tw, mask: list[bool], types) -> Cost:
    """Cost of the gradients `mask` asks for: (grad_input, grad_weight[, grad_bias])."""
    fwd = _direct_flops(go, w)
    flops, nbytes = 0.0, 0
    if mask[0]:  # dgrad: read grad_output and weight, write grad_input
        flops += fwd
        nbytes += _bytes(go, tgo) + _bytes(w, tw) + numel(x_shape) * ELEM_BYTES.get(tx, 4)
    if mask[1]:  # wgrad: read grad_output and input, write grad_weight
        flops += fwd
        nbytes += _bytes(go, tgo) + numel(x_shape) * ELEM_BYTES.get(tx, 4) + _bytes(w, tw)
    if len(mask) > 2 and mask[2]:  # grad_bias: a reduction of grad_output (bytes only: its
        # FLOPs are not counted, as FlopCounterMode does not count them)
        nbytes += _bytes(go, tgo) + w[0] * ELEM_BYTES.get(tgo, 4)
    return Cost(flops, nbytes, _math_dtype(types))


def _backward(order: str, i_mask: int | None, n_mask: int) -> Callable:
    """`order`: which tensors come first: "go,x,w" (convolution_backward) or "x,go,w"
    (cudnn/mkldnn/miopen_convolution_backward)."""
    def cost(dims, types, concrete, out_dims=None) -> Cost | None:
        ts = _tensor_args(dims, types)
        if len(ts) < 3:
            return None
        a, b, (w, tw) = ts[0], ts[1], ts[2]
        (go, tgo), (x, tx) = (a, b) if order == "go,x,w" else (b, a)
        if len(w) < 3 or len(go) != len(w) or len(x) != len(w):
            return None
        mask = _mask(_arg(concrete, i_mask), n_mask) if i_mask is not None else [True] * n_mask
        return _grads(go, tgo, x, tx, w, tw, mask, types)
    return cost


def _backward_one(which: str) -> Callable:
    """cudnn_convolution_backward_input(self_size, grad_output, weight, ...) and
    ..._backward_weight(weight_size, grad_output, self, ...): one gradient each; the size
    of the gradient being made is a recorded int list (argument 0)."""
    def cost(dims, types, concrete, out_dims=None) -> Cost | None:
        ts = _tensor_args(dims, types)
        if len(ts) < 2:
            return None
        (go, tgo), (other, to) = ts[0], ts[1]
        size = [int(v) for v in re.findall(r"-?\d+", _arg(concrete, 0))]
        if which == "input":
            w, tw = other, to
            x = size if len(size) == len(go) else [go[0], w[1], *go[2:]]  # size unknown: bytes approximate
            return _grads(go, tgo, x, tgo, w, tw, [True, False], types)
        x, tx = other, to
        w = size if len(size) == len(go) else None
        if w is None:
            return None  # the kernel size is only in weight_size
        return _grads(go, tgo, x, tx, w, tgo, [False, True], types)
    return cost


CONV_OPS: dict[str, Callable] = {
    **{name: _forward(name) for name in FORWARD_ARGS},
    # convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    #                      transposed, output_padding, groups, output_mask)
    "aten::convolution_backward": _backward("go,x,w", 10, 3),
    # cudnn_convolution_backward(self, grad_output, weight, padding, stride, dilation, groups,
    #                            benchmark, deterministic, allow_tf32, output_mask[2])
    "aten::cudnn_convolution_backward": _backward("x,go,w", 10, 2),
    # mkldnn_convolution_backward(self, grad_output, weight, padding, stride, dilation, groups, output_mask[3])
    "aten::mkldnn_convolution_backward": _backward("x,go,w", 7, 3),
    # miopen_convolution_backward(self, grad_output, weight, padding, stride, dilation, groups,
    #                             benchmark, deterministic, output_mask[3])
    "aten::miopen_convolution_backward": _backward("x,go,w", 9, 3),
    "aten::cudnn_convolution_backward_input": _backward_one("input"),
    "aten::cudnn_convolution_backward_weight": _backward_one("weight"),
    "aten::miopen_convolution_backward_input": _backward_one("input"),
    "aten::miopen_convolution_backward_weight": _backward_one("weight"),
}
