"""Trace-derived text made safe to show: control characters become visible escapes.

An op or kernel name comes from whoever wrote the trace. `ESC ]0;title BEL` sets a
terminal's window title, `ESC [2J` clears the screen, a bare CR overwrites the line before
it, a bidi override (U+202E) reverses what follows; in report.md the same bytes reach
whichever viewer renders it, and in report.html they survive HTML escaping (issue #19).
Every renderer (terminal, Markdown, HTML) passes such strings through `visible()` first,
so they show as `\\x1b]0;title\\x07`, never act. HTML escaping comes after, on top.
"""

from __future__ import annotations

import re
from typing import Any

# C0 controls (newline and tab too: a name is one table cell), DEL, C1 controls (0x80-0x9f:
# 0x9b is a one-byte CSI on some terminals), and the Unicode format characters that reorder
# or split lines (bidi embeddings/overrides/isolates, line/paragraph separators).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(s: Any) -> Any:
    """`s` with control characters shown as `\\xNN` / `\\uNNNN`; non-strings pass through."""
    if not isinstance(s, str):
        return s
    return _CONTROL.sub(_escape, s) if _CONTROL.search(s) else s


def one_line(s: str) -> str:
    """An error or warning message for stderr: one line, nothing a terminal would act on.
    (Messages often quote a file name or a value from a file.)"""
    return visible(str(s))


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
        except (TypeError, msgspec.EncodeError):
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
