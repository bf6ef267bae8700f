"""Bytes of a trace file -> event batches, streamed: the decompressed file is never whole.

The reader used to gunzip the whole file into one buffer and let msgspec split `traceEvents`
into raw slices; that buffer (54 MB for the largest shared trace, 1 GB for a 1 GB trace) was
the peak memory. Here the file is read and decompressed in CHUNK pieces and the
`traceEvents` array is cut into batches of about BATCH_BYTES as the bytes arrive:

  - the top-level object up to `"traceEvents": [` (the *prefix*: schemaVersion,
    deviceProperties, ...) is walked by a small exact scanner (strings, escapes, nesting);
  - inside the array, a batch ends at the first `}` `,` `{` (whitespace allowed) after
    BATCH_BYTES. That text can also occur inside a string or in nested args, so a cut is a
    *guess* that the decoder checks: `[` + batch + `]` is valid JSON exactly when the cut sits
    between two events, because the batch starts between two events and a cut anywhere else
    leaves a string or a bracket open. A wrong guess is merged with the next batch (see
    reader.py); nothing is lost, since batches plus their separators are the exact bytes;
  - after the last cut, the rest of the array, its `]` and whatever follows (metadata may come
    after traceEvents too) is the *tail*; prefix + tail is a small valid JSON document that
    the existing TopLevel decoder reads for the metadata and the last events.

A document this cannot stream (no `"traceEvents": [` among the top-level keys) is not a
trace; up to PREFIX_CAP more bytes of it are read whole and decoded the old way, for the
exact error message. More than PREFIX_CAP bytes before `traceEvents`, or metadata nested
deeper than DEPTH_LIMIT, is refused (bounded.py; issue #19).
"""

from __future__ import annotations

import re
import threading
import zlib
from collections import deque
from pathlib import Path
from typing import BinaryIO, Iterator, TypeVar

import msgspec

from trainprof.bounded import DEPTH_LIMIT, PREFIX_CAP, Shape, describe, open_regular, string_end
from trainprof.errors import InputError

CHUNK = 4 << 20  # decompressed bytes per piece: ~4 ms of zlib without the GIL (see prefetch)
IN_CHUNK = 1 << 20  # compressed bytes read at a time (~18x that once decompressed)
BATCH_BYTES = 1 << 18  # ~1000 Kineto events; sized by measurement (see reader.py)
# Bytes held with no event boundary (the prefix, or the text since the last cut) before their
# shape is checked (bounded.Shape: string, whitespace run, nesting, event size): a normal
# trace never gets there (Kineto events are < 100 KB), so it pays nothing.
STRETCH = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"

try:  # ISA-L's inflate: the same gzip checks (CRC-32, ISIZE), zlib's API, GIL released like zlib's
    from isal import isal_zlib as _inflate
except ImportError:  # a platform without its wheel (pyproject.toml installs it where one exists)
    _inflate = zlib
# Measured 2026-11-29 on the DDP trace's 3 MB .gz (54 MB out), one process taking turns, median
# of 9: zlib 236 ms, isal 117 ms (0.49x), zlib-ng 127 ms (0.54x); benchmarks/inflate.py.
_INFLATE_ERRORS = tuple({zlib.error, getattr(_inflate, "error", zlib.error)})

_BOUNDARY = re.compile(rb"\}[ \t\n\r]*,[ \t\n\r]*\{")
_SPACE = re.compile(rb"[ \t\n\r]*")
_SCALAR = re.compile(rb"[^,}\]\s]*")
_TOKEN = re.compile(rb'["\[\]{}]')


# ------------------------------------------------------------------------------ items
# Plain classes: @dataclass would cost ~1 ms of import time for three records.
class Batch:
    """`[` + events + `]`, ready to decode; `sep` is the separator cut out after it (`,` and
    whitespace); `offset` is where the events start in the decompressed document."""

    __slots__ = ("json", "sep", "offset")

    def __init__(self, json: bytes, sep: bytes, offset: int) -> None:
        self.json, self.sep, self.offset = json, sep, offset


class Tail:
    """The end of the stream: `prefix + rest` is the top-level document with only the events
    after the last cut left in its traceEvents array (or, array=True, Chrome's bare array).
    `offset` is where rest starts in the document."""

    __slots__ = ("prefix", "rest", "offset", "array")

    def __init__(self, prefix: bytes, rest: bytes, offset: int, array: bool) -> None:
        self.prefix, self.rest, self.offset, self.array = prefix, rest, offset, array


class Whole:
    """The whole document, for the old non-streaming path."""

    __slots__ = ("data",)

    def __init__(self, data: bytes | bytearray) -> None:
        self.data = data


# ------------------------------------------------------------------------------ bytes
def open_trace(p: Path) -> tuple[BinaryIO, bytes]:
    """Open the file and read its first piece; errors are InputErrors naming the file.
    Only a regular file is opened (bounded.open_regular: a FIFO or /dev/zero is refused)."""
    f = open_regular(p)
    try:
        first = f.read(max(IN_CHUNK, 2))  # 2: enough to sniff the gzip magic
    except OSError as e:
        f.close()
        raise InputError(f"{p}: cannot read ({describe(e)})") from None
    if not first:
        f.close()
        raise InputError(f"{p}: empty file")
    return f, first


def chunks(p: Path, f: BinaryIO, first: bytes) -> Iterator[bytes]:
    """Decompressed pieces of the file, BOM removed. Sniffs the content, not the suffix:
    a .json that is really gzip (or the reverse) reads."""
    with f:
        gz = first[:2] == _GZIP_MAGIC
        pieces = _gunzip(p, f, first) if gz else _plain(p, f, first)
        head = b""
        for piece in pieces:  # strip a BOM, which may straddle pieces in theory
            if len(head) + len(piece) < 3:
                head += piece
                continue
            piece = head + piece if head else piece
            yield piece[3:] if piece[:3] == _BOM else piece
            break
        else:
            if head and head != _BOM:
                yield head
            return
        yield from pieces


def _read(p: Path, f: BinaryIO, size: int = IN_CHUNK) -> bytes:
    try:
        return f.read(size)
    except OSError as e:
        raise InputError(f"{p}: cannot read ({describe(e)})") from None


def _plain(p: Path, f: BinaryIO, first: bytes) -> Iterator[bytes]:
    yield first
    while piece := _read(p, f, CHUNK):
        yield piece


def _gunzip(p: Path, f: BinaryIO, data: bytes) -> Iterator[bytes]:
    """Every gzip member in turn (zero padding between members is legal), CHUNK at a time.
    wbits=31: gzip wrapper, CRC-32 and ISIZE checked."""
    try:
        while True:  # one member per round
            d = _inflate.decompressobj(wbits=31)
            while not d.eof:
                if not data:
                    data = _read(p, f)
                if data:
                    out = d.decompress(data, CHUNK)
                    data = d.unconsumed_tail  # stale once eof: the rest is in unused_data
                else:
                    out = d.flush()  # what zlib still holds for input it has taken
                    if not d.eof:
                        raise InputError(f"{p}: truncated gzip file (the compressed stream ends early)")
                if out:
                    yield out
            data = d.unused_data.lstrip(b"\x00")  # the next member, or padding
            while not data:
                data = _read(p, f)
                if not data:
                    return
                data = data.lstrip(b"\x00")
    except _INFLATE_ERRORS as e:
        raise InputError(f"{p}: corrupt gzip data ({e})") from None


# ------------------------------------------------------------------------------ JSON
_NEED_MORE = -1
_NOT_STREAMABLE = -2
_TOO_DEEP = -3


class _Prefix:
    """Finds `"traceEvents": [` among the top-level keys, as bytes arrive. Resumable: each
    key/value pair is parsed from `pos` again when it was incomplete, and the walk through a
    nested value keeps its place (`depth`, `pos`), so the work is linear in the prefix."""

    def __init__(self) -> None:
        self.state = "open"
        self.pos = 0
        self.depth = 0  # inside a nested metadata value
        self.array = False  # Chrome's JSON Array Format: the document is the event list

    def scan(self, buf: bytearray, final: bool) -> int:
        """Position just after the `[` of traceEvents, _NEED_MORE or _NOT_STREAMABLE."""
        r = self._scan(buf)
        return _NOT_STREAMABLE if r == _NEED_MORE and final else r

    # complexity 24 (C901), kept: one state machine over the bytes as they arrive, a hot loop kept
    # flat (a helper call per token would cost more than the branch)
    def _scan(self, buf: bytearray) -> int:  # noqa: C901
        n = len(buf)
        while True:
            pos = _SPACE.match(buf, self.pos).end()
            if pos >= n:
                return _NEED_MORE
            c = buf[pos]
            if self.state == "open":
                if c == 0x5B:  # [
                    self.array = True
                    return pos + 1
                if c != 0x7B:  # {
                    return _NOT_STREAMABLE
                self.pos, self.state = pos + 1, "member"
            elif self.state == "member":  # "key": value
                if c != 0x22:  # a key; a '}' ends the object without traceEvents
                    return _NOT_STREAMABLE
                key_end, _ = string_end(buf, pos + 1)
                if key_end < 0:
                    return _NEED_MORE
                colon = _SPACE.match(buf, key_end).end()
                value = _SPACE.match(buf, colon + 1).end()
                if value >= n:
                    return _NEED_MORE
                if buf[colon] != 0x3A:  # :
                    return _NOT_STREAMABLE
                try:
                    key = msgspec.json.decode(buf[pos:key_end])
                except msgspec.DecodeError:
                    return _NOT_STREAMABLE
                v = buf[value]
                if key == "traceEvents":
                    return value + 1 if v == 0x5B else _NOT_STREAMABLE
                if v == 0x22:
                    end, _ = string_end(buf, value + 1)
                    if end < 0:
                        return _NEED_MORE
                    self.pos, self.state = end, "after"
                elif v in (0x5B, 0x7B):
                    self.pos, self.depth, self.state = value + 1, 1, "nested"
                else:  # number, true, false, null
                    end = _SCALAR.match(buf, value).end()
                    if end >= n:
                        return _NEED_MORE
                    self.pos, self.state = end, "after"
            elif self.state == "nested":
                m = _TOKEN.search(buf, self.pos)
                if m is None:
                    self.pos = n
                    return _NEED_MORE
                t = m.start()
                if buf[t] == 0x22:
                    end, _ = string_end(buf, t + 1)
                    if end < 0:
                        self.pos = t
                        return _NEED_MORE
                    self.pos = end
                    continue
                self.depth += 1 if buf[t] in (0x5B, 0x7B) else -1
                if self.depth > DEPTH_LIMIT:
                    return _TOO_DEEP
                self.pos = t + 1
                if self.depth == 0:
                    self.state = "after"
            else:  # "after" a value: ',' and the next key, or '}' (no traceEvents)
                if c != 0x2C:
                    return _NOT_STREAMABLE
                self.pos, self.state = pos + 1, "member"


def split(pieces: Iterator[bytes], source: str = "trace") -> Iterator[Batch | Tail | Whole]:
    """Decompressed pieces -> Batch..., then one Tail; or one Whole (see module docstring).
    An all-whitespace document yields Whole too (the caller reports it as empty)."""
    head = bytearray()
    prefix = _Prefix()
    start = _NEED_MORE
    shape = None  # the head's shape, checked once it is longer than STRETCH
    for piece in pieces:
        head += piece
        start = prefix.scan(head, final=False)
        if start != _NEED_MORE and start <= PREFIX_CAP:
            break
        shape = check_stretch(shape, source, head, 0, len(head) - len(piece), 0, event=False)
        if len(head) > PREFIX_CAP:
            raise InputError(f"{source}: more than {PREFIX_CAP >> 20} MiB before \"traceEvents\"; "
                             "not a Kineto/Chrome trace (or one with absurd metadata)")
    else:
        start = prefix.scan(head, final=True)
    if start == _TOO_DEEP:
        raise InputError(f"{source}: JSON nested more than {DEPTH_LIMIT} levels deep before \"traceEvents\"")
    if start < 0:
        for piece in pieces:  # not a trace: read on only far enough to say what is wrong
            head += piece
            shape = check_stretch(shape, source, head, 0, len(head) - len(piece), 0, event=False)
            if len(head) > 2 * PREFIX_CAP:
                raise InputError(f"{source}: no \"traceEvents\" list in its first {PREFIX_CAP >> 20} MiB; "
                                 "not a Kineto/Chrome trace")
        yield Whole(head)
        return
    pre = bytes(head[:start])
    del head[:start]
    yield from _events(pre, head, pieces, prefix.array, source)


def check_stretch(shape: Shape | None, source: str, buf: bytearray, start: int, fed: int, offset: int,
                   *, event: bool = True, depth: int = 0) -> Shape | None:
    """The shape of buf[start:] once it is longer than STRETCH: a new checker fed from
    `start`, or `shape` fed what arrived since `fed`. Linear: each byte is fed once."""
    if shape is None:
        if len(buf) - start <= STRETCH:
            return None
        shape = Shape(source, offset + start, depth, event=event)
        fed = start
    shape.feed(buf, fed)
    return shape


def _events(pre: bytes, buf: bytearray, pieces: Iterator[bytes], array: bool,
            source: str = "trace") -> Iterator[Batch | Tail]:
    """Cut the array's bytes into batches at guessed event boundaries. Text without a
    boundary past STRETCH has its shape checked as it grows (bounded.Shape): a 2 GiB run of
    `[` or of spaces, a 1 GiB name, is refused within a few MiB instead of held whole."""
    offset = len(pre)  # document offset of buf[0]
    pos = 0  # start of the next batch in buf
    scan = BATCH_BYTES  # where to look for the next boundary
    shape, fed = None, 0  # the checker of buf[pos:] (None below STRETCH) and how far it has read
    depth = 1 if array else 2  # the events' nesting: inside `[`, or inside `{"traceEvents": [`
    while True:
        while len(buf) - pos > BATCH_BYTES:
            m = _BOUNDARY.search(buf, scan)
            if m is None:
                # A boundary split by the piece end starts at the last '}'; resume there.
                last = buf.rfind(b"}", scan)
                scan = last if last >= 0 else len(buf)
                break
            cut, nxt = m.start() + 1, m.end() - 1
            with memoryview(buf) as mv:
                yield Batch(b"".join((b"[", mv[pos:cut], b"]")), bytes(mv[cut:nxt]), offset + pos)
            pos, scan, shape = nxt, nxt + BATCH_BYTES, None
        shape = check_stretch(shape, source, buf, pos, fed, offset, depth=depth)
        fed = len(buf)
        piece = next(pieces, None)
        if piece is None:
            break
        if pos:
            del buf[:pos]  # O(1) at the front of a bytearray
            offset, scan, fed, pos = offset + pos, scan - pos, fed - pos, 0
        buf += piece
    yield Tail(pre, bytes(buf[pos:]), offset + pos, array)


# ------------------------------------------------------------------------------ thread
T = TypeVar("T")
_DONE = object()


class _Raised:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def prefetch(items: Iterator[T], depth: int = 2) -> Iterator[T]:
    """Run `items` in a thread, up to `depth` ahead of the consumer.

    For `chunks()` of a gzip file: zlib and file reads release the GIL, so decompression
    (this thread) overlaps cutting, decoding and column building (the caller) on a second
    core. Every time the thread takes the GIL back it may wait up to the interpreter's 5 ms
    switch interval, so it does as little as possible under the GIL, in large pieces (CHUNK,
    IN_CHUNK): ~4 takes per 4 MB piece, against ~20 ms of work on that piece for the
    caller. Exceptions reach the consumer in order; closing the generator stops the thread.
    (A deque and a Condition, not queue.Queue: the queue module costs ~2 ms of import time.)
    """
    ready: deque = deque()
    cond = threading.Condition()
    stop = False

    def put(x: object) -> bool:
        with cond:
            while len(ready) >= depth and not stop:
                cond.wait()
            if stop:
                return False
            ready.append(x)
            cond.notify()
            return True

    def run() -> None:
        try:
            for x in items:
                if not put(x):
                    return
            put(_DONE)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            put(_Raised(e))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # the file, now, in the thread that read it

    t = threading.Thread(target=run, name="trainprof-trace-reader", daemon=True)
    t.start()
    try:
        while True:
            with cond:
                while not ready:
                    cond.wait()
                x = ready.popleft()
                cond.notify()
            if x is _DONE:
                return
            if isinstance(x, _Raised):
                raise x.exc
            yield x
    finally:
        with cond:
            stop = True
            cond.notify_all()
        t.join()
