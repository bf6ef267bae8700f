"""The bounds on one trace's decompressed bytes, applied to the pieces as they stream by.

`guard(path, pieces, stats)` sits between the decompressor and the JSON cutter (stream.py):

  - the first non-space byte must be `{` (Kineto's object) or `[` (Chrome's JSON Array
    Format); anything else (a NUL stream from /dev/zero, a binary, a CSV) is refused after
    the first piece instead of being read whole;
  - the decompressed total is capped (trainprof.bounded.max_bytes, TRAINPROF_MAX_TRACE_BYTES,
    8 GiB by default): a gzip bomb stops at the cap, not at the machine's memory;
  - invalid UTF-8 (a truncated multi-byte name, Latin-1 written by some converter) is
    replaced by U+FFFD and counted, so one bad name costs a warning, not the trace. Only a
    piece that is not pure ASCII pays for the check: `bytes.isascii` runs at memory speed,
    and Kineto traces are ASCII but for the odd name.
"""

from __future__ import annotations

import codecs
import os
import re
from typing import Iterator

from trainprof.bounded import max_bytes, too_big
from trainprof.errors import InputError

_REPLACEMENT = "\ufffd".encode()
_SPACE = b" \t\r\n"


class Stats:
    """What guard() saw: decompressed bytes and invalid UTF-8 sequences replaced."""

    __slots__ = ("bytes", "invalid_utf8")

    def __init__(self) -> None:
        self.bytes = 0
        self.invalid_utf8 = 0


def guard(path: str | os.PathLike, pieces: Iterator[bytes], stats: Stats, cap: int | None = None) -> Iterator[bytes]:
    cap = max_bytes() if cap is None else cap
    started = False
    decoder = None  # an incremental UTF-8 decoder, once a non-ASCII piece has been seen
    try:
        for piece in pieces:
            stats.bytes += len(piece)
            if stats.bytes > cap:
                raise too_big(path, cap, "of decompressed JSON")
            if not started:
                body = piece.lstrip(_SPACE)
                if not body:
                    yield piece
                    continue
                if body[:1] not in (b"{", b"["):
                    raise InputError(f"{path}: not a trace (it starts with {_show(body[:8])}, "
                                     "not '{' or '[')")
                started = True
            if decoder is None and piece.isascii():
                yield piece
                continue
            if decoder is None:
                decoder = codecs.getincrementaldecoder("utf-8")("replace")
            fixed = _fix(piece, decoder, stats)
            if fixed:
                yield fixed
        if decoder is not None:
            tail = decoder.decode(b"", final=True)
            if tail:
                stats.invalid_utf8 += tail.count("\ufffd")
                yield tail.encode()
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()


def _fix(piece: bytes, decoder: codecs.IncrementalDecoder, stats: Stats) -> bytes:
    """The piece as valid UTF-8 (a character split across pieces is held back by the decoder)."""
    try:  # the common case: valid UTF-8 that only *looks* suspicious (names in CJK, say)
        if not decoder.getstate()[0]:
            piece.decode("utf-8")
            return piece
    except UnicodeDecodeError:
        pass
    text = decoder.decode(piece)
    stats.invalid_utf8 += text.count("\ufffd") - piece.count(_REPLACEMENT)
    return text.encode()


def _show(head: bytes) -> str:
    printable = all(32 <= c < 127 for c in head)
    return repr(head)[1:] if printable else "binary data"


# A JSON escape: a surrogate pair (kept), a lone surrogate (replaced), or any other escape (kept;
# matched so that `\\\\udc00`, an escaped backslash then text, is not read as an escape).
_ESCAPE = re.compile(rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[dD][89a-fA-F][0-9a-fA-F]{2}|.)",
                     re.S)


def fix_surrogates(data: bytes | bytearray) -> tuple[bytes, int]:
    """JSON text with every lone UTF-16 surrogate escape (`\\udc00`, a `\\ud800` not followed
    by a low one) replaced by `\\ufffd`, and how many. RFC 8259 (8.2) lets such strings
    through its grammar and calls what a reader does with them unpredictable; msgspec refuses
    the whole document. Replacing them as invalid UTF-8 is replaced keeps the trace (issue #33:
    the C scanner accepted one in an arg it skips, the pure path refused the file). Same
    length (6 bytes each), so byte offsets in later error messages stay true. `data` must
    start outside a string (a batch between events, a whole document)."""
    if b"\\ud" not in data and b"\\uD" not in data:
        return bytes(data), 0
    n = 0

    def one(m: re.Match) -> bytes:
        nonlocal n
        g = m.group()
        if len(g) == 6 and g[2:3] in (b"d", b"D"):
            n += 1
            return b"\\ufffd"
        return g

    return _ESCAPE.sub(one, data), n
