"""What trainprof wrote in an output folder: `--force` removes that, and nothing else.

Issue #33: `analyze T --out o --force` removed `o/keep.txt` and `o/sub/keep2.txt` (diff,
tune and study too), and `--out . --force` or a home folder would have been a disaster.
Now every command that fills an output folder leaves a manifest in it,
`.trainprof-manifest.json` (written atomically), listing the files and folders it created
there, relative to the folder:

    {"schema": "trainprof.manifest/1", "files": ["analysis.json", "plots/roofline.png"],
     "dirs": ["plots"]}

  - a staged folder (`analyze`, `diff`, `run`, `memory`, `bench`: atomic.staged_dir) gets
    the whole staging folder listed just before it is renamed into place: everything in it
    is ours, since we created it empty;
  - a folder written as the command goes (a checkpointed `run`, `tune`, `study`, `report`,
    `ettr`) is listed as it is written: inside `tracking(folder)`, every file atomic.py
    writes there, and every journal jsonl.py appends to, is added to the manifest (and
    files written by others for us, a profiler's trace, with `note`).

`--force` then removes, in this order of checks, only:
  - files a valid manifest of the folder, or of a sub-folder, lists (a sub-folder holding
    its own manifest was the `--out` of another trainprof command: study's baseline/ run);
  - the manifests themselves, and the listed folders once empty.
Anything else (an unlisted file or folder, a manifest that is not ours, a symbolic link:
trainprof writes none, an earlier output of another command that the manifest does not list)
refuses the whole `--force` before a byte is deleted, naming one such entry; so does an
`--out` that is itself a symbolic link. A manifest can only name paths inside its folder.
The walk and the removal go through folder descriptors (O_NOFOLLOW, unlink/rmdir by name in
the folder's descriptor): an entry swapped for a link while --force runs is left and named,
never followed out of the folder (issue #45), and `remove` returns what it removed.

`--out` may never be the current folder, an ancestor of it, the home folder or a
filesystem root (`check_place`): replacing one of those would remove the user's work.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import msgspec

from trainprof.errors import InputError, UsageError

NAME = ".trainprof-manifest.json"
SCHEMA = "trainprof.manifest/1"
MAX_BYTES = 64 << 20  # ~1M entries; a study's folder lists a few hundred


# --------------------------------------------------------------------------- the file
def _valid(rel: object) -> bool:
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel or "\0" in rel:
        return False
    return all(part not in ("", ".", "..") for part in rel.split("/"))


class _Manifest(msgspec.Struct):
    """The manifest as typed: a list of anything but names fails at its first item, unbuilt
    (json.loads built it whole: 64 MB of `{}` in `files` took 1.4 GB, issue #45)."""

    schema: str
    files: list[str]
    dirs: list[str] = []


def _parse(data: bytes) -> tuple[set[str], set[str]] | None:
    # bounded.decode_cost's rule (owned/ cannot import it: same layer), for the one item a typed
    # manifest can hold: a name is a str object of ~72 bytes; a million one-letter names cost 18x
    if len(data) > MAX_BYTES or 72 * (data.count(b'"') // 2) > max(1 << 20, 16 * len(data)):
        return None
    try:
        doc = msgspec.json.decode(data, type=_Manifest)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return None
    if doc.schema != SCHEMA or not all(map(_valid, doc.files + doc.dirs)):
        return None
    return set(doc.files), set(doc.dirs)


def _manifest_at(dir_fd: int) -> tuple[set[str], set[str]] | None:
    """The manifest of the folder open at `dir_fd`: a regular file, opened without following a
    link (a link is no manifest), or None."""
    try:
        fd = os.open(NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return _parse(b"".join(chunks))
    except OSError:
        return None
    finally:
        os.close(fd)


def read(folder: str | os.PathLike) -> tuple[set[str], set[str]] | None:
    """(files, dirs) a folder's manifest lists, or None when it has none or an invalid one
    (an invalid manifest owns nothing: --force then refuses, it never guesses)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        return _manifest_at(fd)
    finally:
        os.close(fd)


def write(folder: str | os.PathLike, files: set[str], dirs: set[str]) -> None:
    """The manifest, atomically: a temp file named as atomic.py names them (so a killed
    writer's is cleaned like theirs), fsync'd, renamed. Not through atomic.py, which sits
    above this module (it calls `note` after each write); an OSError (ENOSPC) reaches the
    caller's handler in atomic.py, which names the file and the reason in one line."""
    import tempfile

    doc = {"schema": SCHEMA, "files": sorted(files - {NAME}), "dirs": sorted(dirs)}
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{NAME}.{os.getpid()}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write((json.dumps(doc, indent=1) + "\n").encode())
            f.flush()
            os.fsync(f.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, folder / NAME)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def list_tree(folder: str | os.PathLike) -> tuple[set[str], set[str]]:
    """Every file and folder under `folder` (a staging folder, all ours), relative."""
    files, dirs = set(), set()
    root = Path(folder)
    for here, subdirs, names in os.walk(root):
        rel = Path(here).relative_to(root)
        for d in subdirs:
            dirs.add((rel / d).as_posix())
        for n in names:
            files.add((rel / n).as_posix())
    return files, dirs


def stamp_tree(folder: str | os.PathLike) -> None:
    """The manifest of a staging folder, just before it is renamed into place."""
    files, dirs = list_tree(folder)
    write(folder, files, dirs)


# --------------------------------------------------------------------------- tracking
_STAGING = re.compile(r"^\..+\.\d+\.[^.]+\.partial$")  # atomic.staged_dir's (and the trial runner's) folders
_lock = threading.Lock()
_roots: dict[Path, tuple[set[str], set[str]]] = {}


@contextmanager
def tracking(folder: str | os.PathLike) -> Iterator[None]:
    """Inside this block, each file atomic.py writes under `folder` joins its manifest."""
    root = Path(folder).absolute()
    with _lock:
        known = read(root) if root.is_dir() else None
        _roots[root] = (set(known[0]), set(known[1])) if known else (set(), set())
    try:
        yield
    finally:
        with _lock:
            _roots.pop(root, None)


def note(path: str | os.PathLike) -> None:
    """`path` (a file or folder just written) belongs to every tracked folder above it."""
    if not _roots:
        return
    p = Path(path).absolute()
    if p.name == NAME:
        return
    with _lock:
        for root, (files, dirs) in _roots.items():
            try:
                rel = p.relative_to(root)
            except ValueError:
                continue
            if not rel.parts or any(map(_STAGING.match, rel.parts)):
                continue  # inside a staging folder: listed as a whole once renamed into place
            new_dirs = {Path(*rel.parts[:k]).as_posix() for k in range(1, len(rel.parts))}
            entry = rel.as_posix()
            is_dir = p.is_dir() and not p.is_symlink()
            if (entry in dirs if is_dir else entry in files) and new_dirs <= dirs:
                continue
            (dirs if is_dir else files).add(entry)
            dirs |= new_dirs
            write(root, files, dirs)


# --------------------------------------------------------------------------- --force
# Removal goes through folder descriptors, never paths (issue #45): each folder is opened with
# O_NOFOLLOW relative to its parent's descriptor and each entry removed by name in it. A folder
# swapped for a symbolic link after the check (to your home, say) is then never followed: opening
# it fails, and it is left and reported instead of emptying what the link points to.
_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
before_remove: Callable[[str], None] | None = None
"""Tests only: called with each entry's relative path just before it is removed (a swap in flight)."""


@dataclass
class Inventory:
    """What --force would remove under a folder (paths relative to it) and what stops it."""

    files: list[str] = field(default_factory=list)  # trainprof's files, its manifests included
    dirs: list[str] = field(default_factory=list)  # trainprof's folders, deepest first
    foreign: list[tuple[str, str]] = field(default_factory=list)  # (entry, why it is not trainprof's)


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def _listed(rel: str, owners: list[tuple[str, set[str], set[str]]], is_dir: bool) -> bool:
    for base, files, dirs in owners:
        inner = rel if not base else rel[len(base) + 1:] if rel.startswith(base + "/") else None
        if inner is not None and inner in (dirs if is_dir else files):
            return True
    return False


def refuse_link(path: str | os.PathLike, flag: str = "--out") -> None:
    """--force on `path`: refused (one line) when `path` itself is a symbolic link."""
    if Path(path).is_symlink():
        raise UsageError(f"{flag} {path}: is a symbolic link (to {os.readlink(path)}); --force removes trainprof's "
                         "output only inside a real folder, so nothing was removed: name the folder itself")


def _open_root(path: str | os.PathLike, flag: str) -> int:
    """A descriptor of the folder `path` itself: a symbolic link there is refused, not followed."""
    p = Path(path)
    refuse_link(p, flag)
    try:
        return os.open(p, _O_DIR)
    except OSError as e:
        raise InputError(f"{flag} {path}: cannot open the folder ({(e.strerror or str(e)).lower()})") from None


def _inventory(root_fd: int, where: object) -> Inventory:
    """Walk the folder open at `root_fd` through descriptors, never following a link. A folder is
    entered only when a manifest above it lists it: one holding its own manifest but not listed
    is an earlier output of another command, put there by hand, and not ours to remove."""
    inv = Inventory()

    def walk(dfd: int, rel: str, owners: list[tuple[str, set[str], set[str]]]) -> None:
        mine = _manifest_at(dfd)
        if mine is not None:
            owners = [*owners, (rel, *mine)]
            inv.files.append(_join(rel, NAME))
        try:
            with os.scandir(dfd) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            raise InputError(f"{where}/{rel}: cannot list ({e.strerror})".replace("/:", ":")) from None
        for e in entries:
            r = _join(rel, e.name)
            if e.name == NAME and mine is not None:
                continue
            if e.is_symlink():
                inv.foreign.append((r, "a symbolic link (trainprof writes none)"))
            elif e.is_dir(follow_symlinks=False) and _listed(r, owners, True):
                child = os.open(e.name, _O_DIR, dir_fd=dfd)
                try:
                    walk(child, r, owners)
                finally:
                    os.close(child)
                inv.dirs.append(r)
            elif e.is_dir(follow_symlinks=False):
                inv.foreign.append((r, _unlisted_dir(dfd, e.name)))
            elif e.is_file(follow_symlinks=False) and _listed(r, owners, False):
                inv.files.append(r)
            else:
                inv.foreign.append((r, ""))

    walk(root_fd, "", [])
    return inv


def _unlisted_dir(dfd: int, name: str) -> str:
    try:
        child = os.open(name, _O_DIR, dir_fd=dfd)
    except OSError:
        return ""
    try:
        return "the output of another trainprof command, not listed here" if _manifest_at(child) else ""
    finally:
        os.close(child)


def _refuse_foreign(inv: Inventory, path: str | os.PathLike, flag: str) -> None:
    if inv.foreign:
        first, why = inv.foreign[0]
        more = f" (and {len(inv.foreign) - 1} more)" if len(inv.foreign) > 1 else ""
        raise UsageError(f"{flag} {path}: holds {first!r}{f' ({why})' if why else ''}{more}, which trainprof did not "
                         f"write there (no {NAME} there lists it); --force replaces only trainprof's own output, so "
                         "nothing was removed: move it away or choose another folder")


def check_removable(path: str | os.PathLike, flag: str = "--out") -> None:
    """Refuse (one line, nothing deleted) --force on a folder holding anything trainprof did
    not write there, or on a symbolic link. (The caller first removes a killed command's temp
    files, ours by name and dead pid: atomic.clean_stale.)"""
    if not os.path.lexists(path):
        return
    if not Path(path).is_symlink() and not Path(path).is_dir():
        return
    fd = _open_root(path, flag)
    try:
        _refuse_foreign(_inventory(fd, path), path, flag)
    finally:
        os.close(fd)


def check_replaceable(folder: str | os.PathLike, names: list[str], flag: str = "--out",
                      hint: str = "move it away or choose another folder") -> None:
    """A command that adds named files to an existing folder (`report --out DIR2 --force`,
    `report DIR`) may replace those of them that trainprof wrote there, and no other file."""
    root = Path(folder)
    mine = read(root) or (set(), set())
    for name in names:
        if os.path.lexists(root / name) and name not in mine[0]:
            raise UsageError(f"{flag} {folder}: its {name} was not written by trainprof (no {NAME} there lists "
                             f"it); nothing was replaced: {hint}")


def _parent_fd(root_fd: int, rel: str) -> tuple[int, str]:
    """(a descriptor of rel's folder, rel's last name), each folder on the way opened with
    O_NOFOLLOW from the one above it. The caller closes the descriptor (unless it is root_fd)."""
    *parts, name = rel.split("/")
    fd = root_fd
    try:
        for part in parts:
            nxt = os.open(part, _O_DIR, dir_fd=fd)
            if fd != root_fd:
                os.close(fd)
            fd = nxt
    except OSError:
        if fd != root_fd:
            os.close(fd)
        raise
    return fd, name


def _remove_at(root_fd: int, rel: str, is_dir: bool) -> bool:
    """Remove one entry found in the inventory, if it still is what the inventory saw (a
    regular file, a real folder); False when it changed (left alone)."""
    if before_remove is not None:
        before_remove(rel)
    try:
        fd, name = _parent_fd(root_fd, rel)
    except OSError:
        return False  # a folder on the way is gone or is a link now: not followed
    try:
        if is_dir:
            os.rmdir(name, dir_fd=fd)  # a link in its place: ENOTDIR; something added: ENOTEMPTY
            return True
        if not stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            return False
        os.unlink(name, dir_fd=fd)  # swapped for a link since: the link goes, never its target
        return True
    except FileNotFoundError:
        return False
    except OSError as e:
        if e.errno in (errno.ENOTDIR, errno.ENOTEMPTY, errno.EEXIST, errno.EISDIR):
            return False
        raise
    finally:
        if fd != root_fd:
            os.close(fd)


def remove(path: str | os.PathLike, flag: str = "--out") -> list[str]:
    """--force: remove what trainprof wrote in `path` (the folder itself stays, empty), after
    checking that nothing else is there. Returns what was removed (relative paths); an entry
    that changed between the check and its removal is left, and named in an InputError."""
    if not os.path.lexists(path) or not (Path(path).is_dir() or Path(path).is_symlink()):
        return []
    fd = _open_root(path, flag)
    removed: list[str] = []
    left: list[str] = []
    try:
        inv = _inventory(fd, path)
        _refuse_foreign(inv, path, flag)
        for rel, is_dir in [(f, False) for f in inv.files] + [(d, True) for d in inv.dirs]:
            (removed if _remove_at(fd, rel, is_dir) else left).append(rel)
    except OSError as e:
        raise InputError(f"{flag} {path}: cannot remove trainprof's old output ({e.strerror}: {e.filename}); "
                         f"removed {len(removed)} of its entries") from None
    finally:
        os.close(fd)
    with _lock:  # a tracked folder starts over: what it listed is gone
        if Path(path).absolute() in _roots:
            _roots[Path(path).absolute()] = (set(), set())
    if left:
        more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
        raise InputError(f"{flag} {path}: removed {len(removed)} of trainprof's entries; {left[0]!r}{more} changed "
                         "while they were being removed (a link or other entry in their place) and were left; "
                         "nothing was followed out of the folder")
    return removed


def check_place(path: str | os.PathLike, flag: str = "--out") -> None:
    """An output folder may not be the current folder, one of its ancestors, the home
    folder or a filesystem root: `--force` there would remove the user's work, and a
    staged folder renamed over the current folder leaves the shell in a deleted one."""
    p = Path(path)  # not expanduser: a `~` that reaches us was quoted, a folder named `~` (and `~0` raised)
    try:
        target = p.resolve()
        cwd = Path.cwd().resolve()
    except (OSError, RuntimeError):
        return
    what = None
    if target.parent == target:
        what = "a filesystem root"
    elif target == cwd:
        what = "the current folder"
    elif target in cwd.parents:
        what = "an ancestor of the current folder"
    else:
        try:
            if target == Path.home().resolve():
                what = "the home folder"
        except (OSError, RuntimeError, KeyError):
            pass
    if what:
        raise UsageError(f"{flag} {path}: is {what}; trainprof writes its output into a folder of its own "
                         "(name a new one, such as out/)")
