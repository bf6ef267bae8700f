"""The memory attacks of issue #33, generated at any size (small in tests, full for docs).

Each writer streams its output through zlib, so a 2 GiB inflated attack needs a few MB of
memory to make. `TRACE_ATTACKS` (trace files) and `RECORD_ATTACKS` (record files for
`trainprof report`) map a name to (writer, the full size in bytes of its payload);
benchmarks/attack_memory.py runs them at full size, docs/reliability.md has its results.
"""

from __future__ import annotations

import zlib
from pathlib import Path

PIECE = 1 << 20


def _gzip(path: Path, head: bytes, unit: bytes, n_bytes: int, tail: bytes) -> Path:
    """head + unit repeated to n_bytes + tail, gzip-compressed, written as it is made."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = unit * max(1, PIECE // len(unit))
    with open(path, "wb") as f:
        f.write(z.compress(head))
        left = n_bytes
        while left > 0:
            piece = block if left >= len(block) else block[: left - left % len(unit) or len(unit)]
            f.write(z.compress(piece))
            left -= len(piece)
        f.write(z.compress(tail))
        f.write(z.flush())
    return path


def backslashes(path: Path, n_bytes: int) -> Path:
    """One name of `\\\\` escapes (a 64 KB .json.gz held a 63 MiB string: 3.99 GB, 56 s)."""
    return _gzip(path, b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1, "name": "', b"\\\\", n_bytes, b'"}]}')


def backslashes_in_metadata(path: Path, n_bytes: int) -> Path:
    """The same string in the metadata before traceEvents, where a regex matched it again
    as each piece arrived (the issue's 3.99 GB and 56 s)."""
    return _gzip(path, b'{"schemaVersion": 1, "note": "', b"\\\\", n_bytes, b'", "traceEvents": []}')


def brackets(path: Path, n_bytes: int) -> Path:
    """`[` and nothing else (2 MB of gzip, 2 GiB inflated: MemoryError at 4.2 GB)."""
    return _gzip(path, b"", b"[", n_bytes, b"")


def spaces(path: Path, n_bytes: int) -> Path:
    """Spaces inside the event list (2 GiB: MemoryError at 4.2 GB, or 6.3 GB and rc 0)."""
    return _gzip(path, b'{"traceEvents": [', b" ", n_bytes, b"]}")


def leading_spaces(path: Path, n_bytes: int) -> Path:
    """Spaces before the document starts."""
    return _gzip(path, b"", b" ", n_bytes, b'{"traceEvents": []}')


def long_name(path: Path, n_bytes: int) -> Path:
    """One event whose name is n_bytes long (1 GiB: MemoryError at 5.3 GB)."""
    return _gzip(path, b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1, "name": "', b"a", n_bytes, b'"}]}')


def boundary_string(path: Path, n_bytes: int) -> Path:
    """A name made of `}, {` (the cutter's boundary guess) again and again: every cut is wrong
    and the reader carries the batches, so the carry, not the cutter, must be bounded."""
    return _gzip(path, b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1, "name": "', b"}, {" * 64 + b"x" * 200,
                 n_bytes, b'"}]}')


def deep_record(folder: Path, n_bytes: int, depth: int = 300) -> Path:
    """analysis.json: a string of n_bytes, then `depth` brackets (32 MB: `report` reached
    2.06 GB before its depth error)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "analysis.json", "wb") as f:
        f.write(b'{"schema": "trainprof.analysis/1", "x": "')
        left = n_bytes
        while left > 0:
            f.write(b"\\\\" * min(left // 2 or 1, PIECE))
            left -= 2 * min(left // 2 or 1, PIECE)
        f.write(b'", "y": ' + b"[" * depth + b"]" * depth + b"}")
    return folder


TRACE_ATTACKS = {"backslashes": (backslashes, 63 << 20), "backslashes_in_metadata": (backslashes_in_metadata, 63 << 20), "brackets": (brackets, 2 << 30),
                 "spaces": (spaces, 2 << 30), "leading_spaces": (leading_spaces, 2 << 30),
                 "long_name": (long_name, 1 << 30), "boundary_string": (boundary_string, 256 << 20)}
RECORD_ATTACKS = {"deep_record": (deep_record, 32 << 20)}
