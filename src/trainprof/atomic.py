"""Atomic writes: a reader (or a crash) never sees a half-written file or folder."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` to `path` via a temp file in the same folder + os.replace (atomic on POSIX)."""
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` via a temp file in the same folder + os.replace (atomic on POSIX)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual file mode
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


@contextmanager
def staged_dir(final: str | os.PathLike) -> Iterator[Path]:
    """Yield a hidden sibling folder to fill; rename it to `final` only if the block succeeds.

    On any exception the staging folder is removed, so a failed run leaves nothing behind.
    `final` must not exist yet (we never merge into or overwrite a user's folder).
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=final.parent))
    try:
        os.chmod(stage, 0o777 & ~_umask())  # mkdtemp makes 0700
        yield stage
        os.rename(stage, final)  # fails if `final` appeared meanwhile: never clobber
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def append_jsonl(path: str | os.PathLike, obj: object) -> None:
    """Append one JSON line and fsync: journals are append-only, and a kill -9 right after
    this returns loses nothing. O_APPEND keeps concurrent writers' lines whole."""
    import json

    line = (json.dumps(obj, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666 & ~_umask())
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """The whole lines of a journal; a line torn by a kill mid-write is skipped."""
    import json

    out = []
    try:
        text = Path(path).read_text("utf-8")
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out
