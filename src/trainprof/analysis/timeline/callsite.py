"""The user's line behind a call: the innermost recorded Python frame outside torch, the
Python standard library and built-ins.

With `with_stack=True` Kineto records one `python_function` event per frame, named
`path(line): function`, paths relative to the sys.path entry they came from
(`torch/nn/modules/module.py(1743): _call_impl`, `transformers/pipelines/base.py(1173):
_ensure_tensor_on_device`), built-ins as `<built-in method to of Tensor object at 0x…>`.
The innermost frame around a `.to()` sync is that built-in, which names no line a user can
change; the first frame outside the skipped families is the one to fix. Third-party
libraries (transformers, a trainer) are kept: that is where their users' code calls torch.
"""

from __future__ import annotations

import sys

import numpy as np

from trainprof import namematch
from trainprof.analysis.timeline.context import Context
from trainprof.trace import Kind
from trainprof.trace.ids import distinct
from trainprof.trace.nesting import group_ids, innermost_containing

_FRAME = namematch.compile(r"^(?P<path>.+?)\((?P<line>\d+)\): (?P<func>.*)$")
# torch's own Python (and its compiler stack): never the line a user edits
LIBRARY_PREFIXES = ("torch/", "functorch/", "triton/")
_PACKAGES = namematch.compile(r"^.*/(site|dist)-packages/")
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) - {"test", "this"}


def is_user_frame(name: str) -> bool:
    """True for a `path(line): func` frame outside torch, the standard library and built-ins."""
    m = _FRAME.match(name)
    if m is None:  # <built-in ...>, <frozen ...>, nn.Module: ..., <string>
        return False
    path = _PACKAGES.sub("", m["path"].replace("\\", "/"))
    if path.startswith("<") or path.startswith(LIBRARY_PREFIXES) or "/lib/python3" in path:
        return False
    top = path.split("/", 1)[0]
    return top.removesuffix(".py") not in _STDLIB


def frame_label(name: str) -> str:
    """`transformers/pipelines/base.py(1173): _ensure_tensor_on_device` →
    `transformers/pipelines/base.py(1173) _ensure_tensor_on_device`."""
    m = _FRAME.match(name)
    return f"{_PACKAGES.sub('', m['path'])}({m['line']}) {m['func']}" if m else name


def user_frames(ctx: Context, rows: np.ndarray) -> list[str | None]:
    """Innermost user frame around each row (same thread), else None: frames nest, so the
    innermost *user* frame containing a point is the innermost containing one among user frames."""
    t = ctx.trace
    py = t.rows(Kind.PYTHON_FUNCTION)
    if not len(py) or not len(rows):
        return [None] * len(rows)
    ids = distinct(t.name_id[py], len(t.names))
    user_ids = ids[[is_user_frame(t.names[i]) for i in ids]]
    py = py[np.isin(t.name_id[py], user_ids)]
    if not len(py):
        return [None] * len(rows)
    g = group_ids(np.concatenate([t.pid[py], t.pid[rows]]), np.concatenate([t.tid[py], t.tid[rows]]))
    hit = innermost_containing(g[: len(py)], t.ts_us[py], t.end_us[py], g[len(py):], t.ts_us[rows])
    return [None if h < 0 else frame_label(t.name(int(py[h]))) for h in hit]
