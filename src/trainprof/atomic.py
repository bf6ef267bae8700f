"""Atomic writes: a reader (or a crash) never sees a half-written file or folder.

Files: written to a hidden temp sibling `.NAME.<pid>.<random>.tmp`, fsync'd, given the usual
mode (0666 & ~umask: mkstemp's 0600 made roofline.png unreadable to a group that could read
run.json), renamed over the target, and the folder fsync'd (the rename itself is then on
disk: a power cut cannot leave a checkpoint's name pointing at nothing).

Folders: filled as a hidden sibling `.NAME.<pid>.<random>.partial` and renamed into place
when complete. The pid in the name lets the next command clean up after one that was killed
(SIGKILL runs no cleanup): `clean_stale` removes only entries whose process is gone.

Every OSError on the way (ENOSPC, EACCES, a parent that is a file) becomes an InputError
naming the path (exit code 2, one line), and the temp file or folder is removed.

Beside it: jsontext.py (the JSON text of a record), jsonl.py (append-only journals),
outdir.py (a command's output folder and its --out checks), owned.py (the folder manifest).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from trainprof import owned
from trainprof.errors import InputError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def file_mode() -> int:
    return 0o666 & ~_umask()


def write_error(path: Path, e: OSError, what: str = "cannot write") -> InputError:
    """An OSError on the way to `path` as one line naming it (exit code 2)."""
    from trainprof.bounded import describe

    return InputError(f"{path}: {what} ({describe(e)})")


def _mkdir(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file where a folder is needed (mkdir's own word for it)
        raise InputError(f"{folder}: exists and is not a folder") from None
    except OSError as e:
        raise write_error(folder, e, "cannot create the folder") from None


def fsync_dir(folder: str | os.PathLike) -> None:
    """Make a rename inside `folder` durable (POSIX: the rename lives in the directory)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # not supported here (Windows); the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def temp_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temp path beside `path` for a writer that wants a file name (torch.save, savefig);
    on success it is fsync'd, given the usual mode and renamed over `path`."""
    path = Path(path)
    _mkdir(path.parent)
    clean_stale(path.parent, path.name)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError as e:
        raise write_error(path, e) from None
    try:
        yield Path(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
        fsync_dir(path.parent)
        owned.note(path)  # in a folder being written as the command goes: its manifest lists it
    except OSError as e:
        _unlink_quietly(tmp)
        raise write_error(path, e) from None
    except BaseException:
        _unlink_quietly(tmp)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` to `path` via a temp file in the same folder + os.replace (atomic on POSIX).
    A lone surrogate (from a name that is not UTF-8) is written as its escape, never raised on."""
    write_bytes(path, text.encode("utf-8", "backslashreplace"))


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` via a temp file in the same folder + os.replace (atomic on POSIX)."""
    with temp_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)


@contextmanager
def staged_dir(final: str | os.PathLike, *, force: bool = False) -> Iterator[Path]:
    """Yield a hidden sibling folder to fill; rename it to `final` only if the block succeeds.

    On any exception the staging folder is removed, so a failed run leaves nothing behind.
    `final` must not exist yet or be an empty folder (we never merge into or overwrite a
    user's folder); with force=True an existing `final` is replaced, and what trainprof had
    written there removed only after the new one is complete (owned.py: never a file it
    did not write). The folder gets its manifest (owned.py) just before it appears.
    """
    final = Path(final)
    _mkdir(final.parent)
    clean_stale(final.parent, final.name)
    try:
        stage = Path(tempfile.mkdtemp(prefix=f".{final.name}.{os.getpid()}.", suffix=".partial", dir=final.parent))
        os.chmod(stage, 0o777 & ~_umask())  # mkdtemp makes 0700
    except OSError as e:
        raise write_error(final, e, "cannot create the folder") from None
    try:
        yield stage
        owned.stamp_tree(stage)
        _swap_in(stage, final, force)
        fsync_dir(final.parent)
        owned.note(final)  # staged inside a tracked folder (a study's): the folder is listed there
    except OSError as e:
        shutil.rmtree(stage, ignore_errors=True)
        raise write_error(final, e) from None
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def _swap_in(stage: Path, final: Path, force: bool) -> None:
    try:
        os.rename(stage, final)  # also over an empty folder; fails over a non-empty one: never clobber
        return
    except OSError as e:
        if not force or not final.exists():
            if final.exists():
                raise InputError(f"{final}: appeared while we worked and is not empty; left alone "
                                 "(pass --force to replace it)") from None
            raise e
    clean_stale(final)
    owned.remove(final)  # checked whole first: refuses, deleting nothing, if anything is not ours
    os.rename(stage, final)  # over the now empty folder


STALE_NAME = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]+\.(?:partial|tmp)$")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: someone else's live process
        return True
    return True


def clean_stale(folder: str | os.PathLike, name: str | None = None) -> list[Path]:
    """Remove `.NAME.<pid>.*.partial|tmp` left in `folder` by a process that no longer runs
    (killed mid-write). `name` limits it to one target's leftovers. Returns what it removed."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for e in entries:
        m = STALE_NAME.match(e.name)
        if m is None or (name is not None and m.group("name") != name) or _alive(int(m.group("pid"))):
            continue
        p = Path(e.path)
        try:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(p)
            else:
                p.unlink()
            removed.append(p)
        except OSError:
            pass
    return removed


def _unlink_quietly(path: str | os.PathLike) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
