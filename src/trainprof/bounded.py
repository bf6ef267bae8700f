"""Bounded reading of user files: regular files only, a size cap, a nesting cap, one-line errors.

Every file a user names (a trace, an `--ncu` CSV, run.json, tune.json, a journal) is read
through here, so that no input can make trainprof block, run out of memory or print a
traceback (issue #19: `analyze /dev/zero` reached 13.6 GB RSS in 20 s; a FIFO blocked
forever; JSON nested 1000 deep raised RecursionError):

  - `open_regular` opens with O_NONBLOCK and checks fstat: a FIFO, a device, a socket or a
    folder is refused at once with one line (O_NONBLOCK: opening a FIFO with no writer would
    otherwise block before we could look at it);
  - `max_bytes()` caps the *decompressed* bytes read from one file: TRAINPROF_MAX_TRACE_BYTES,
    default 8 GiB (the largest real trace we know is 1 GB; a gzip bomb of 2 GB of NULs is
    8.7 MB on disk, so only the decompressed count means anything);
  - `Shape` checks the shape of JSON text as it streams by, in linear time and without
    recursion: strings, whitespace runs, nesting and (in traces) event size, each under one
    of LIMITS (issue #33: tiny inputs that cost gigabytes); records are read through it
    piece by piece (`read_json_bytes`). Python's decoders recurse (msgspec and json raise
    RecursionError at ~1000 levels), so depth matters for them too;
  - `describe` turns an OSError into the few words a user needs (ELOOP is a symlink loop,
    not "no such file").

Every error is an `InputError` (exit code 2) whose message starts with the file's name.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import BinaryIO

from trainprof.errors import InputError, UsageError

ENV_MAX_BYTES = "TRAINPROF_MAX_TRACE_BYTES"
DEFAULT_MAX_BYTES = 8 << 30  # 8 GiB decompressed: 8x the largest real trace we have read (1 GB)
PREFIX_CAP = 64 << 20  # bytes allowed before "traceEvents" (Kineto writes ~10 KB of metadata there)
DEPTH_LIMIT = 256  # JSON nesting; our records are < 10 deep, Kineto events 3
RECORD_CAP = 1 << 30  # run.json / tune.json / journals / ncu CSV: far above any real one (a few MB)

# The shape of the JSON itself, checked as the bytes stream by (issue #33: a 64 KB .json.gz
# held a 63 MiB string, 2 MB of gzip inflated to 2 GiB of `[` or of spaces, and each cost
# gigabytes). Each bound is far above anything a profiler or trainprof writes and far below
# what hurts: (env var, default, what it bounds).
LIMITS = {
    "string": ("TRAINPROF_MAX_STRING_BYTES", 16 << 20, "a JSON string"),  # Kineto's longest: templated names, ~10 KB
    "space": ("TRAINPROF_MAX_SPACE_BYTES", 1 << 20, "a run of whitespace"),  # indentation: tens of bytes
    "depth": ("TRAINPROF_MAX_JSON_DEPTH", DEPTH_LIMIT, "JSON nesting"),
    "event": ("TRAINPROF_MAX_EVENT_BYTES", 64 << 20, "one trace event (or the text between two)"),
}

# One name read from a trace (an event's name or category, a device name), in characters.
# Matching and showing a name is linear now (namematch.py, report/text.py), but a name
# is matched, hashed and rendered many times, and "gemm_" x 200,000 is a 1.7 KB .json.gz
# (issue #45). The longest real name we have is 5,123 characters (a templated cuDNN kernel);
# Kineto's longest are ~10 KB.
NAME_LIMIT = ("TRAINPROF_MAX_NAME_CHARS", 64 << 10)

_REASONS = {
    errno.ENOENT: "no such file",
    errno.ELOOP: "too many levels of symbolic links (a symlink loop?)",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EISDIR: "is a folder, not a file",
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.ENAMETOOLONG: "file name too long",
    errno.EIO: "input/output error",
    errno.EEXIST: "already exists",
    errno.ENOTEMPTY: "folder not empty",
}


def describe(e: OSError) -> str:
    """A few words for an OSError (no errno number, no Python class name)."""
    return _REASONS.get(e.errno or -1) or (e.strerror or str(e)).lower()


def max_bytes() -> int:
    """The decompressed-size cap per input file (TRAINPROF_MAX_TRACE_BYTES, bytes; suffixes
    K, M, G, T in powers of 1024 are accepted)."""
    return _env_size(ENV_MAX_BYTES, DEFAULT_MAX_BYTES)


def max_name_chars() -> int:
    """The longest name a trace may hold (NAME_LIMIT: TRAINPROF_MAX_NAME_CHARS)."""
    return _env_size(*NAME_LIMIT)


def limit(name: str) -> int:
    """One of LIMITS, from its environment variable or its default."""
    env, default, _ = LIMITS[name]
    return _env_size(env, default)


def env_int(name: str, default: int) -> int:
    """A whole-number environment variable set by a launcher (WORLD_SIZE, RANK, LOCAL_RANK,
    LOCAL_WORLD_SIZE: torchrun's), or `default` when unset; one line naming it when it is not
    a number (#45: WORLD_SIZE=abc was a ValueError traceback)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        v = int(raw)
    except ValueError:
        v = None
    if v is None or not 0 <= v < 1 << 31:
        raise UsageError(f"{name}={raw!r}: expected a whole number from 0 (torchrun sets it for each rank); "
                         "unset it to run a single process")
    return v


def _env_size(env: str, default: int) -> int:
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    m = re.fullmatch(r"(\d{1,15})\s*([KMGT]?)i?B?", raw, re.IGNORECASE)
    if not m or int(m.group(1)) <= 0:
        raise UsageError(f"{env}={raw!r}: expected a positive count such as 8589934592 or 8G")
    return int(m.group(1)) << (10 * " KMGT".index(m.group(2).upper() or " "))


def human(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} bytes"


def too_big(path: str | os.PathLike, cap: int, what: str = "") -> InputError:
    return InputError(f"{path}: more than {human(cap)}{' ' + what if what else ''}; refusing to read further "
                      f"(raise {ENV_MAX_BYTES} if this file is real)")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """Open `path` for reading in binary; refuse anything but a regular file, at once."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise InputError(f"{path}: {describe(e)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path}: is {_kind(st.st_mode)}, not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: str | os.PathLike, cap: int | None = None) -> bytes:
    """The whole of a small regular file (a record, a CSV), refusing more than `cap` bytes."""
    cap = min(max_bytes(), RECORD_CAP) if cap is None else cap
    with open_regular(path) as f:
        try:
            data = f.read(cap + 1)
        except OSError as e:
            raise InputError(f"{path}: cannot read ({describe(e)})") from None
    if len(data) > cap:
        raise too_big(path, cap)
    return data


# ------------------------------------------------------------------ the shape of JSON text
_BACKSLASHES = re.compile(rb"\\+")  # one character class: sre matches a run in O(1) memory
_OPEN, _CLOSE = re.compile(rb"[\[{]+"), re.compile(rb"[\]}]+")
_SPACE_RUN = re.compile(rb"[ \t\r\n]+")
LONG_SPACE = 1 << 16  # whitespace runs shorter than this are skipped in C, never looked at one by one
_NEXT = re.compile(rb'["\[\]{}]|[ \t\r\n]{%d,}' % LONG_SPACE)


def string_end(buf: bytes | bytearray, pos: int, end: int | None = None) -> tuple[int, int]:
    """From `pos` inside a JSON string: (index just past its closing quote, or -1 if the
    string goes on past `end`; index where scanning stopped). Escapes are skipped a run of
    backslashes at a time, with find() and a one-class regex: no per-character Python, and no
    backtracking stack (`"(?:[^"\\]|\\.)*"` kept ~128 bytes per escape on sre's stack: a 32 MB
    string of `\\\\` took 2 GB, issue #33)."""
    end = len(buf) if end is None else end
    while True:
        q = buf.find(b'"', pos, end)
        b = buf.find(b"\\", pos, q if q >= 0 else end)
        if b < 0:
            return (q + 1, q + 1) if q >= 0 else (-1, end)
        run = _BACKSLASHES.match(buf, b, end).end()
        if run >= end:
            return -1, b  # backslashes up to the end: whether they escape the next byte is unknown yet
        pos = run + (run - b) % 2  # an odd run escapes the byte after it


class Shape:
    """JSON text checked against LIMITS as it arrives, piece by piece, in linear time: the
    longest string, the longest whitespace run and the nesting depth (the text must start
    outside a string; `depth` is where it starts). Each refusal is one InputError naming
    `where`, the byte offset, the limit and the variable that raises it."""

    def __init__(self, where: object, offset: int = 0, depth: int = 0, *, event: bool = False) -> None:
        self.where, self.offset, self.depth = where, offset, depth
        self.max_string, self.max_space, self.max_depth = limit("string"), limit("space"), limit("depth")
        self.max_event = limit("event") if event else None
        self.seen = 0  # bytes fed
        self.string = -1  # bytes of the open string so far; -1: outside a string
        self.escaped = False  # the last piece ended in an odd run of backslashes: the next byte is escaped
        self.space = 0  # whitespace run continuing at the end of the last piece

    def feed(self, data: bytes | bytearray | memoryview, start: int = 0) -> None:
        """Check data[start:] (the next piece of the text)."""
        n = len(data)
        pos = start
        base = self.offset + self.seen - start  # document offset of data[0]
        self.seen += n - start
        if self.max_event is not None and self.seen > self.max_event:
            self._refuse("event", base + n)
        if self.space and pos < n:  # a run of whitespace going on from the last piece
            m = _SPACE_RUN.match(data, pos)
            if m is None:
                self.space = 0
            else:
                self._spaces(m.end() - pos, base + pos)
                pos = m.end()
        while pos < n:
            if self.string >= 0:  # inside a string
                if self.escaped:
                    self.escaped, self.string, pos = False, self.string + 1, pos + 1
                    continue
                stop, scanned = string_end(data, pos)
                self.string += (stop - 1 if stop >= 0 else n) - pos
                if self.string > self.max_string:
                    self._refuse("string", base + pos)
                if stop < 0:
                    self.escaped = (n - scanned) % 2 == 1  # the backslashes ending the piece, if any
                    return
                self.string, pos = -1, stop
                continue
            m = _NEXT.search(data, pos)
            if m is None:
                self.space = 0
                return
            c = data[m.start()]
            if c != 0x20 and c != 0x0A and c != 0x09 and c != 0x0D:
                self.space = 0  # (a run shorter than LONG_SPACE was skipped unseen: undercounted by < 64 KiB)
            if c == 0x22:
                self.string, pos = 0, m.start() + 1
            elif c in (0x5B, 0x7B):
                pos = _OPEN.match(data, m.start()).end()
                self.depth += pos - m.start()
                if self.depth > self.max_depth:
                    self._refuse("depth", base + m.start())
            elif c in (0x5D, 0x7D):
                pos = _CLOSE.match(data, m.start()).end()
                self.depth = max(0, self.depth - (pos - m.start()))
            else:
                self.space = 0  # a new run: what came before it was not whitespace
                self._spaces(m.end() - m.start(), base + m.start())
                pos = m.end()

    def _spaces(self, k: int, at: int) -> None:
        self.space += k
        if self.space > self.max_space:
            self._refuse("space", at)

    def _refuse(self, name: str, at: int) -> None:
        env, _, what = LIMITS[name]
        size = getattr(self, f"max_{name}")
        amount = f"{size} levels" if name == "depth" else human(size)
        words = f"JSON nested more than {amount} deep" if name == "depth" else f"{what} longer than {amount}"
        raise InputError(f"{self.where}: {words} (at byte {at}); refusing to read further "
                         f"(raise {env} if this file is real)")


def read_json_bytes(path: str | os.PathLike, cap: int | None = None, piece: int = 1 << 20) -> bytearray:
    """A record's bytes, read piece by piece with its shape checked as they arrive: a 32 MB
    analysis.json of backslashes is refused at the string limit, having read 16 MiB, not
    after holding it all (it took `report` to 2.06 GB, issue #33). A file larger than the cap
    is refused before a byte is read (fstat); what decoding it would cost is checked as the
    pieces arrive (`check_cost`)."""
    cap = min(max_bytes(), RECORD_CAP) if cap is None else cap
    shape = Shape(path)
    buf = bytearray()  # grown in place (realloc, ~1/8 spare): the pieces joined at the end held the file twice
    cost = 0
    with open_regular(path) as f:
        if os.fstat(f.fileno()).st_size > cap:
            raise too_big(path, cap)
        while True:
            try:
                data = f.read(min(piece, cap + 1 - len(buf)))
            except OSError as e:
                raise InputError(f"{path}: cannot read ({describe(e)})") from None
            if not data:
                break
            cost += decode_cost(data)  # (in C, before Shape's slower look: a storm of `{}` stops here)
            check_cost(path, cost, len(buf) + len(data))
            shape.feed(data)
            buf += data
            if len(buf) > cap:
                raise too_big(path, cap)
    return buf


# What decoding JSON into Python objects costs at most, in bytes of memory per item of text:
# an object is a dict of up to 5 keys (184 bytes) and its slot in a list; an array (56 + 8) or a
# string (49 + length + 8) 72; each value after a comma at most a float or an int and its slot
# (40, with a list's spare slots; tests/unit/test_record_cost.py measures each with tracemalloc).
# A file of `{}` cost 25x its size (a 100 MB run.json took 2.6 GB to refuse, a journal of `{}`
# lines 5 GB, issue #45). Keys are counted as strings although msgspec caches them, and
# brackets, quotes and commas inside strings are counted too: the estimate errs high.
OBJECT_COST, ITEM_COST, VALUE_COST = 192, 72, 40
COST_FACTOR = 16  # a record may cost at most this many times its size (real ones, minified: 3.5-9x)
COST_FLOOR = 1 << 20  # small files are never refused by cost


def decode_cost(data: bytes | bytearray | memoryview) -> int:
    """An upper bound on the memory (bytes) that JSON text `data` takes once decoded into
    Python objects, counted in C (`bytes.count`, ~1 GB/s)."""
    return (OBJECT_COST * data.count(b"{") + ITEM_COST * (data.count(b"[") + data.count(b'"') // 2)
            + VALUE_COST * data.count(b","))


def check_cost(where: object, cost: int, nbytes: int, factor: int = COST_FACTOR) -> None:
    """Refuse JSON text whose first `nbytes` would cost `cost` bytes once decoded
    (`decode_cost`), more than `factor` times their size, before decoding any of it: one line
    naming `where`. Checked on every prefix as the pieces arrive, so a storm of tiny items is
    refused within its first MiB, not after Shape has looked at each."""
    if cost > max(COST_FLOOR, factor * nbytes):
        raise InputError(f"{where}: its first {human(nbytes)} hold so many objects, arrays, strings and numbers "
                         f"that decoding them could take {human(cost)}, more than {factor}x the text; refusing to "
                         "read further (no record trainprof writes is so dense)")


def load_json(path: str | os.PathLike, cap: int | None = None) -> object:
    """A JSON file read with every bound above; invalid UTF-8 is an error here (records are
    ours and always valid UTF-8), NaN/Infinity are refused (not JSON)."""
    import msgspec

    data = read_json_bytes(path, cap)
    if not data or data.isspace():  # (strip() would copy the whole file)
        raise InputError(f"{path}: empty file")
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as e:
        raise InputError(f"{path}: not valid JSON ({e})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not valid UTF-8 text") from None
    except RecursionError:  # deeper than the check could see (cannot happen below 256)
        raise InputError(f"{path}: JSON nested too deep") from None


def load_object(path: str | os.PathLike, cap: int | None = None) -> dict:
    """`load_json` for a record that must be a JSON object (one line otherwise)."""
    doc = load_json(path, cap)
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected a JSON object, found {type(doc).__name__}")
    return doc
