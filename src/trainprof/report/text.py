"""Trace-derived text made safe to show: control characters become visible escapes.

The escaping itself is trainprof/controls.py (one function for every terminal path, the
commands printed to be pasted included); this module applies it to whole records for the
renderers (terminal, Markdown, HTML: in report.md the same bytes reach whichever viewer
renders it, and in report.html they survive HTML escaping, issue #19). HTML escaping comes
after, on top.
"""

from __future__ import annotations

import re
from typing import Any

from trainprof.controls import CONTROL as _CONTROL
from trainprof.controls import one_line, visible  # noqa: F401 - this module's API since #19


# How msgspec writes C0 controls inside JSON strings (DEL and above it stay raw, where
# _CONTROL sees them). A literal backslash followed by "n" also matches: the slow path then
# runs for nothing, which is only slower.
_ESCAPED_CONTROL = re.compile(r"\\[bfnrt]|\\u00[01][0-9a-f]")


def visible_tree(obj: Any) -> Any:
    """A JSON-like record with every string (keys too) passed through `visible`; used by
    renderers that show many fields of a record (tables, templates). A record without any
    control character is returned as it is: one msgspec encoding and two regex scans
    (~3 ms for a 1 MB analysis) instead of a call per string (~100 ms, 80k strings)."""
    import msgspec

    if isinstance(obj, (dict, list, tuple, msgspec.Struct)):
        try:
            text = msgspec.json.encode(obj).decode()
        except (TypeError, msgspec.EncodeError, UnicodeEncodeError):  # a lone surrogate: the slow path shows it
            text = None
        if text is not None and not _CONTROL.search(text) and not _ESCAPED_CONTROL.search(text):
            return obj
    if isinstance(obj, msgspec.Struct):  # typed records (recordtypes/): cleaned as data, typed again
        return msgspec.convert(_visible_tree(msgspec.to_builtins(obj)), type(obj))
    return _visible_tree(obj)


def _visible_tree(obj: Any) -> Any:
    if isinstance(obj, str):
        return visible(obj)
    if isinstance(obj, dict):
        return {visible(k): _visible_tree(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_visible_tree(v) for v in obj] if isinstance(obj, list) else tuple(_visible_tree(v) for v in obj)
    return obj


def visible_bundle(b: Any) -> Any:
    """A report Bundle (report/loader.py) whose records have every string made visible."""
    import dataclasses

    import msgspec

    return dataclasses.replace(b, **{f.name: visible_tree(getattr(b, f.name)) for f in dataclasses.fields(b)
                                     if isinstance(getattr(b, f.name), (dict, msgspec.Struct))})
