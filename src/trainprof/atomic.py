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


def _fail(path: Path, e: OSError, what: str = "cannot write") -> InputError:
    from trainprof.bounded import describe

    return InputError(f"{path}: {what} ({describe(e)})")


def _mkdir(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file where a folder is needed (mkdir's own word for it)
        raise InputError(f"{folder}: exists and is not a folder") from None
    except OSError as e:
        raise _fail(folder, e, "cannot create the folder") from None


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
        raise _fail(path, e) from None
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
        raise _fail(path, e) from None
    except BaseException:
        _unlink_quietly(tmp)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` to `path` via a temp file in the same folder + os.replace (atomic on POSIX)."""
    write_bytes(path, text.encode("utf-8"))


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
        raise _fail(final, e, "cannot create the folder") from None
    try:
        yield stage
        owned.stamp_tree(stage)
        _swap_in(stage, final, force)
        fsync_dir(final.parent)
        owned.note(final)  # staged inside a tracked folder (a study's): the folder is listed there
    except OSError as e:
        shutil.rmtree(stage, ignore_errors=True)
        raise _fail(final, e) from None
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


def stamp() -> str:
    """Local time as YYYYmmdd-HHMMSS: sorts by time, reads at a glance."""
    import datetime

    return datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def fresh_dir(name: str = "{stamp}", root: str | os.PathLike = "runs") -> Path:
    """The default output folder of a command: `root/name` with {stamp} = `stamp()`, then
    -2, -3, ... appended while it exists (two commands started within one second)."""
    base = Path(root) / name.format(stamp=stamp())
    out, n = base, 1
    while out.exists():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out


def check_out(path: str | os.PathLike, *, flag: str = "--out", force: bool = False,
              merge: bool = False) -> Path:
    """Before any expensive work: can the output folder `path` be created (or replaced)?

    A folder that exists and holds anything is refused unless `force` (what trainprof wrote
    there will be replaced, and the folder must hold nothing else: owned.py) or `merge` (the
    command adds named files to it, as `report --out` does, and checks those itself); the
    current folder, its ancestors, the home folder and a filesystem root are refused always;
    a path whose parent is a file, or a folder we may not write, is refused. One line, exit
    2, never after minutes of work (issue #19: `memory` failed after 126 s).
    """
    import errno
    import stat as _stat

    from trainprof.bounded import describe
    from trainprof.errors import UsageError

    p = Path(path)
    owned.check_place(p, flag)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        st = None
    except OSError as e:
        if e.errno != errno.ENOTDIR:
            raise UsageError(f"{flag} {p}: {describe(e)}") from None
        st = None  # a parent is a file: found below
    if st is not None:
        if not _stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{flag} {p}: exists and is not a folder")
        if not (force or merge) and any(not _STALE.match(e.name) for e in os.scandir(p)):
            raise UsageError(f"{flag} {p}: exists and is not empty; pass --force to replace what trainprof "
                             "wrote there (nothing was written)")
        if force and not merge:
            clean_stale(p)  # a killed command's temp files: ours by name and dead pid
            owned.check_removable(p, flag)
        for d in (p,) if merge else (p, p.parent):
            if not os.access(d, os.W_OK | os.X_OK):
                raise UsageError(f"{flag} {p}: cannot write in {d} (permission denied)")
        return p
    for a in p.absolute().parents:
        try:
            st = os.stat(a)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:
            raise UsageError(f"{flag} {p}: {a}: {describe(e)}") from None
        if not _stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{flag} {p}: {a} is a file, not a folder; cannot create the output there")
        if not os.access(a, os.W_OK | os.X_OK):
            raise UsageError(f"{flag} {p}: cannot create it in {a} (permission denied)")
        break
    return p


def clear_for_force(path: str | os.PathLike, flag: str = "--out") -> None:
    """--force on a command that writes into its folder as it goes (a checkpointed run, a
    tune, a study): what trainprof wrote there is removed at the start, nothing else
    (owned.remove refuses, deleting nothing, when the folder holds anything not ours)."""
    owned.check_place(path, flag)
    if Path(path).is_dir():
        clean_stale(path)
    owned.remove(path, flag)


_STALE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]+\.(?:partial|tmp)$")


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
        m = _STALE.match(e.name)
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


def append_jsonl(path: str | os.PathLike, obj: object) -> None:
    """Append one JSON line and fsync: journals are append-only, and a kill -9 right after
    this returns loses nothing. O_APPEND keeps concurrent writers' lines whole.
    Non-finite floats (a diverged loss) are written as null: NaN is not JSON."""
    line = (dumps(obj, indent=None, sort_keys=True) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, file_mode())
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        owned.note(path)  # a journal in a folder written as the command goes: its manifest lists it
    except OSError as e:
        raise _fail(Path(path), e, "cannot append") from None


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """The whole lines of a journal; a line torn by a kill mid-write is skipped.
    Read through bounded.read_capped: a regular file, at most the record cap."""
    import json

    from trainprof.bounded import read_capped

    out = []
    if not os.path.lexists(path):
        return out
    data = read_capped(path)
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def finite(obj: object) -> object:
    """`obj` with every NaN/±Infinity float replaced by None (JSON has no such numbers;
    json.dumps would write the bare words `NaN`/`Infinity`, which strict readers refuse)."""
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def dumps(obj: object, indent: int | None = 2, sort_keys: bool = False) -> str:
    """Strict JSON text of a record: non-finite floats become null (see `finite`).

    Indented records go through msgspec (which writes NaN/±Infinity as null itself): 2 ms
    instead of 45 ms for a 1 MB analysis.json. Its text is json.dumps's (same separators
    and order, non-ASCII escaped so the output stays ASCII) except floats in their shortest
    form (1e16, not 1e+16); a record msgspec cannot encode takes the json.dumps path. A
    str subclass (torch's TorchVersion) is written as its string and a numpy scalar as its
    Python number, so a typed record (a msgspec Struct, which json.dumps cannot write) that
    holds one still encodes."""
    import json

    if indent == 2 and not sort_keys:
        import msgspec

        try:
            raw = msgspec.json.format(msgspec.json.encode(obj, enc_hook=encode_hook), indent=2)
        except (TypeError, msgspec.EncodeError):
            pass
        else:
            return raw.decode("ascii") if raw.isascii() else _ascii(raw.decode("utf-8"))
    return json.dumps(finite(obj), indent=indent, sort_keys=sort_keys, allow_nan=False)


def encode_hook(o: object) -> object:
    """msgspec's hook for what it does not encode itself: str and number subclasses and
    numpy scalars, as json.dumps would write them."""
    if isinstance(o, str):
        return str(o)
    if isinstance(o, bool):
        return bool(o)
    if isinstance(o, int):
        return int(o)
    if isinstance(o, float):
        return float(o)
    item = getattr(o, "item", None)  # numpy scalars
    if callable(item) and getattr(o, "shape", None) == ():
        return item()
    raise TypeError(f"cannot encode {type(o).__name__}")


def _ascii(text: str) -> str:
    """JSON text with every non-ASCII character as json.dumps writes it (\\u00e9, a
    surrogate pair above U+FFFF). Outside strings JSON is ASCII, so this only touches strings."""
    import re

    def esc(m: re.Match) -> str:
        c = ord(m.group())
        if c < 0x10000:
            return f"\\u{c:04x}"
        c -= 0x10000
        return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"

    return re.sub(r"[^\x00-\x7f]", esc, text)
