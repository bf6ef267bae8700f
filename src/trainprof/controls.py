"""The one escaping of text that reaches a terminal: control characters shown, never sent.

An op or kernel name comes from whoever wrote the trace, a path from whoever named it.
`ESC ]0;title BEL` sets a terminal's window title, `ESC [2J` clears the screen, `ESC c`
resets it, `ESC 7`/`ESC 8` save and restore the cursor (text can be written over what was
printed), `ESC P ... ESC \\` (DCS) talks to the terminal itself, a bare CR overwrites the
line before it, U+009B is a one-byte CSI on terminals that read C1 controls, and a bidi
override (U+202E) reverses what follows (issues #19, #33). Every string from a trace, a
record or a user that is printed goes through `visible` (report/text.py for renderers,
cli/ for messages); commands printed to be pasted go through `shell_join`. Shown as
`\\x1b]0;title\\x07`: every control character has one visible spelling, which is also a
valid escape in a regular expression (ncu's `--kernel-name regex:` keeps matching).
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Iterable

# C0 controls (newline and tab too: a name is one table cell), DEL, C1 controls (0x80-0x9f:
# 0x9b is a one-byte CSI, 0x90 a DCS, 0x9d an OSC), and the Unicode format characters that
# reorder or split lines (bidi embeddings/overrides/isolates, line/paragraph separators).
# Lone surrogates too: a file name that is not UTF-8 reaches Python as its bytes 0x80-0xff
# turned into U+DC80-U+DCFF (PEP 383); printed, they raised UnicodeEncodeError (#45). Shown
# as the byte they stand for (`\xff`), which also pastes back into bash's $'...' as that byte.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:  # an undecodable byte of a file name (surrogateescape)
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(s: Any) -> Any:
    """`s` with control characters shown as `\\xNN` / `\\uNNNN`; non-strings pass through."""
    if not isinstance(s, str):
        return s
    return CONTROL.sub(_escape, s) if CONTROL.search(s) else s


def one_line(s: object) -> str:
    """An error or warning message for stderr: one line, nothing a terminal would act on.
    (Messages often quote a file name or a value from a file.)"""
    return visible(str(s))


def shell_quote(arg: str) -> str:
    """One shell word for `arg`: shlex.quote's, or bash/zsh ANSI-C quoting `$'...\\x1b...'`
    when it holds control characters (pasted, it is the same argument; printed, it acts on
    nothing)."""
    if not CONTROL.search(arg):
        return shlex.quote(arg)
    # in $'...', \xNN is a byte: a C1 control (a character >= U+0080) is spelled \uNNNN, its UTF-8
    body = CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x80 else
                       f"\\x{ord(m.group()) - 0xDC00:02x}" if 0xDC80 <= ord(m.group()) <= 0xDCFF else
                       f"\\u{ord(m.group()):04x}", arg.replace("\\", "\\\\").replace("'", "\\'"))
    return f"$'{body}'"


def shell_join(argv: Iterable[str]) -> str:
    """shlex.join, with `shell_quote` for each word."""
    return " ".join(shell_quote(a) for a in argv)
