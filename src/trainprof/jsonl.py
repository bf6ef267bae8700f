"""JSONL journals: append-only, one JSON object per line, fsync'd per line, so a kill -9
loses at most the line being written and a reader skips a torn last line (a run's
journal.jsonl, a tune's and a study's).
"""

from __future__ import annotations

import os
from pathlib import Path

from trainprof import owned
from trainprof.atomic import file_mode, write_error
from trainprof.errors import InputError
from trainprof.jsontext import dumps


def append_jsonl(path: str | os.PathLike, obj: object) -> None:
    """Append one JSON line and fsync: journals are append-only, and a kill -9 right after
    this returns loses nothing. O_APPEND keeps concurrent writers' lines whole.
    Non-finite floats (a diverged loss) are written as null: NaN is not JSON. O_NOFOLLOW: a
    symbolic link planted where the journal goes is refused, never appended through (#45)."""
    line = (dumps(obj, indent=None, sort_keys=True) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                     file_mode())
        try:
            end = os.fstat(fd).st_size
            if end and os.pread(fd, 1, end - 1) != b"\n":
                # the last line was torn by a kill mid-write: start a line of our own, or this
                # record would join the fragment and be skipped with it on the next read
                line = b"\n" + line
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        owned.note(path)  # a journal in a folder written as the command goes: its manifest lists it
    except OSError as e:
        if os.path.islink(path):
            raise InputError(f"{path}: cannot append (it is a symbolic link, to {os.readlink(path)}; a journal is "
                             "a file of trainprof's own, never written through a link)") from None
        raise write_error(Path(path), e, "cannot append") from None


LINE_CAP = 16 << 20  # one journal line: an entry is a few KB (a tune trial's config and result)


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """The whole lines of a journal; a line torn by a kill mid-write is skipped.
    Read line by line (never the whole file, then split: that held it three times over):
    a regular file at most the record cap, each line at most LINE_CAP, and what decoding the
    lines costs bounded as they are read (bounded.check_cost: a 100 MB journal of `{}` lines
    took 5 GB, issue #45)."""
    import msgspec

    from trainprof.bounded import RECORD_CAP, check_cost, decode_cost, describe, max_bytes, open_regular, too_big

    out: list[dict] = []
    if not os.path.lexists(path):
        return out
    cap = min(max_bytes(), RECORD_CAP)
    decoder = msgspec.json.Decoder()
    seen = cost = 0
    with open_regular(path) as f:
        if os.fstat(f.fileno()).st_size > cap:
            raise too_big(path, cap)
        while True:
            try:
                line = f.readline(LINE_CAP + 1)
            except OSError as e:
                raise InputError(f"{path}: cannot read ({describe(e)})") from None
            if not line:
                break
            seen += len(line)
            if seen > cap:
                raise too_big(path, cap)
            if len(line) > LINE_CAP and not line.endswith(b"\n"):
                raise InputError(f"{path}: a line longer than {LINE_CAP >> 20} MiB at byte {seen - len(line)}; "
                                 "refusing to read further (a journal line is a few KB)")
            cost += decode_cost(line)
            check_cost(path, cost, seen)
            try:
                obj = decoder.decode(line)
            except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
                continue  # a torn line (or not ours): skipped, as a kill mid-write leaves one
            if isinstance(obj, dict):
                out.append(obj)
    return out
