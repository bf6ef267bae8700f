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
  - `check_depth` measures JSON nesting without recursion (a bracket counter that skips
    strings) and refuses more than DEPTH_LIMIT levels; records are flat, Kineto args are
    3 deep, and Python's decoders recurse (msgspec and json raise RecursionError at ~1000);
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
    raw = os.environ.get(ENV_MAX_BYTES, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    m = re.fullmatch(r"(\d+)\s*([KMGT]?)i?B?", raw, re.IGNORECASE)
    if not m or int(m.group(1)) <= 0:
        raise UsageError(f"{ENV_MAX_BYTES}={raw!r}: expected a positive byte count such as 8589934592 or 8G")
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


_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)


def json_depth(data: bytes | bytearray | memoryview, stop_at: int | None = None) -> int:
    """Deepest nesting of `[`/`{` in JSON text, strings skipped; no recursion, linear time.
    Stops early once `stop_at` is exceeded. Costs nothing for text with fewer brackets than
    `stop_at` (bytes.count runs in C)."""
    if stop_at is not None and data.count(b"[") + data.count(b"{") <= stop_at:
        return 0  # cannot be deeper than its number of opening brackets
    depth = deepest = 0
    for m in _TOKEN.finditer(data):
        c = m.group()
        if c in (b"[", b"{"):
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_at is not None and deepest > stop_at:
                    break
        elif c in (b"]", b"}"):
            depth -= 1
    return deepest


def check_depth(path: str | os.PathLike, data: bytes | bytearray | memoryview, limit: int = DEPTH_LIMIT) -> None:
    if json_depth(data, stop_at=limit) > limit:
        raise InputError(f"{path}: JSON nested more than {limit} levels deep; not a trainprof record or trace")


def load_json(path: str | os.PathLike, cap: int | None = None) -> object:
    """A JSON file read with every bound above; invalid UTF-8 is an error here (records are
    ours and always valid UTF-8), NaN/Infinity are refused (not JSON)."""
    import msgspec

    data = read_capped(path, cap)
    if not data.strip():
        raise InputError(f"{path}: empty file")
    check_depth(path, data)
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as e:
        raise InputError(f"{path}: not valid JSON ({e})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not valid UTF-8 text") from None
    except RecursionError:  # deeper than the check could see (cannot happen below 256)
        raise InputError(f"{path}: JSON nested too deep") from None

