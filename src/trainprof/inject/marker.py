"""`--step-marker MODULE:QUALNAME`: one call of that function is one step.

The function is wrapped where it lives (a module global, or a class attribute for a method,
keeping staticmethod/classmethod), so every later call through its name is a step; its
return is the step boundary. It is looked up when the agent starts and again at each hook
event until found, because the script's own module (`__main__`, named here by its file
name: `train:train_step` for train.py) defines it only as it runs. A call already running
when the wrapper goes in is not seen: `in_progress` tells the agent to count it as step 0.
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType
from typing import Any, Callable


def find_module(name: str) -> ModuleType | None:
    if name in sys.modules:
        return sys.modules[name]
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name == name:  # python -m NAME
        return main
    path = getattr(main, "__file__", None) or ""
    stem = path.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".py")
    return main if stem == name else None


def resolve(marker: str) -> tuple[Any, str, Any] | None:
    """(owner, attribute name, the attribute as stored) of MODULE:QUALNAME, or None (not yet)."""
    mod_name, _, qual = marker.partition(":")
    owner: Any = find_module(mod_name)
    if owner is None:
        return None
    *path, name = qual.split(".")
    for p in path:
        owner = getattr(owner, p, None)
        if owner is None:
            return None
    stored = owner.__dict__.get(name) if hasattr(owner, "__dict__") else None
    if stored is None:
        return None
    return owner, name, stored


def wrap(stored: Any, on_return: Callable[[], None]) -> Any:
    """The replacement for `stored`: calls it, then `on_return()` (only when it returns)."""
    kind = type(stored) if isinstance(stored, (staticmethod, classmethod)) else None
    fn = stored.__func__ if kind is not None else stored
    if not callable(fn):
        raise TypeError(f"{type(fn).__name__} is not callable")

    @functools.wraps(fn)
    def marked(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        on_return()
        return out

    marked.__trainprof_marker__ = True  # type: ignore[attr-defined]
    return kind(marked) if kind is not None else marked


def in_progress(stored: Any) -> bool:
    """Whether a call of `stored` is running in this thread (on the stack of frames)."""
    fn = stored.__func__ if isinstance(stored, (staticmethod, classmethod)) else stored
    code = getattr(fn, "__code__", None)
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False
