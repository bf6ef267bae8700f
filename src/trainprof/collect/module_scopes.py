"""One `record_function` range per nn.Module call, so a trace can be read per module.

torch.profiler's own `with_modules=True` only acts through the Python tracer
(`with_stack=True`), which records every Python call: a trace several times larger and a
step several times slower (docs/profile.md, "Per-module times"). Two global hooks cost one
range per module call instead. The range is named as with_modules names its frames,
`nn.Module: <Class>_<n>` (n counts the instances of that class in first-call order), so
analysis/cost/modules.py reads traces of either kind.

The hooks sit beside any the program registers (torch calls every global hook, ours among
them) and are removed when the profiled window closes. `pattern` (--modules) limits the
*ranges* to the modules whose class or label it matches (RE2 search); every op is still
recorded, because torch.profiler cannot switch op recording per module without leaving
holes in the steps' timeline.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from contextlib import contextmanager
from typing import Any, Iterator

from trainprof.trace.kinds import MODULE_PREFIX as PREFIX  # the one spelling (modules.py reads it)


@contextmanager
def module_scopes(pattern: Any = None) -> Iterator[None]:
    """Install the hooks for the body's duration. `pattern`: a compiled pattern with
    `.search(text)` (userregex.compile_user) or None for every module."""
    import torch
    from torch.nn.modules import module as nn_module

    labels: "weakref.WeakKeyDictionary[Any, str | None]" = weakref.WeakKeyDictionary()
    seen: Counter[str] = Counter()
    local = threading.local()

    def label(mod) -> str | None:  # noqa: ANN001
        try:
            return labels[mod]
        except TypeError:  # a module class that defines __eq__ without __hash__: no weak key, no range
            return None
        except KeyError:
            cls = type(mod).__name__
            name = f"{cls}_{seen[cls]}"
            seen[cls] += 1
            keep = pattern is None or bool(pattern.search(cls) or pattern.search(name))
            labels[mod] = name if keep else None
            return labels[mod]

    def pre(mod, _args) -> None:  # noqa: ANN001
        try:
            name = label(mod)
            if name is None:
                return
            rf = torch.autograd.profiler.record_function(PREFIX + name)
            rf.__enter__()
            stack = getattr(local, "stack", None)
            if stack is None:
                stack = local.stack = []
            stack.append((mod, rf))
        except Exception:  # noqa: BLE001  an error of ours never reaches the program: no range, that is all
            return

    def post(mod, _args, _out) -> None:  # noqa: ANN001
        try:
            stack = getattr(local, "stack", None)
            if stack and stack[-1][0] is mod:  # only a range this module opened (always_call: also on error)
                stack.pop()[1].__exit__(None, None, None)
        except Exception:  # noqa: BLE001
            return

    h_pre = nn_module.register_module_forward_pre_hook(pre)
    h_post = nn_module.register_module_forward_hook(post, always_call=True)
    try:
        yield
    finally:
        h_pre.remove()
        h_post.remove()
