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
Anything else (an unlisted file or folder, a manifest that is not ours) refuses the whole
`--force` before a byte is deleted, naming one such entry. Entries are walked with lstat and
never followed: a symbolic link is an entry (removing it removes the link, not its target),
and a manifest can only name paths inside its folder.

`--out` may never be the current folder, an ancestor of it, the home folder or a
filesystem root (`check_place`): replacing one of those would remove the user's work.
"""

from __future__ import annotations

import json
import os
import re
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from trainprof.errors import InputError, UsageError

NAME = ".trainprof-manifest.json"
SCHEMA = "trainprof.manifest/1"
MAX_BYTES = 64 << 20  # ~1M entries; a study's folder lists a few hundred


# --------------------------------------------------------------------------- the file
def _valid(rel: object) -> bool:
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel or "\0" in rel:
        return False
    return all(part not in ("", ".", "..") for part in rel.split("/"))


def read(folder: str | os.PathLike) -> tuple[set[str], set[str]] | None:
    """(files, dirs) a folder's manifest lists, or None when it has none or an invalid one
    (an invalid manifest owns nothing: --force then refuses, it never guesses)."""
    path = Path(folder) / NAME
    try:
        if path.is_symlink() or not path.is_file():
            return None
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            return None
        doc = json.loads(data)
    except (ValueError, RecursionError, OSError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        return None
    files, dirs = doc.get("files"), doc.get("dirs", [])
    if not isinstance(files, list) or not isinstance(dirs, list) or not all(map(_valid, files + dirs)):
        return None
    return set(files), set(dirs)


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
def _inventory(root: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """(owned files, owned folders deepest first, unrelated entries) under `root`."""
    files: list[Path] = []
    folders: list[Path] = []
    unrelated: list[Path] = []

    def walk(d: Path, owners: list[tuple[Path, set[str], set[str]]]) -> None:
        mine = read(d)
        if mine is not None:
            owners = [*owners, (d, *mine)]
            files.append(d / NAME)
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as e:
            raise InputError(f"{d}: cannot list ({e.strerror})") from None
        for e in entries:
            p = Path(e.path)
            if p.name == NAME and mine is not None:
                continue
            real_dir = e.is_dir(follow_symlinks=False)
            listed = any(p.relative_to(r).as_posix() in (ds if real_dir else fs) for r, fs, ds in owners)
            if real_dir and (listed or read(p) is not None):
                walk(p, owners)
                folders.append(p)
            elif listed and not real_dir:
                files.append(p)
            else:
                unrelated.append(p)

    walk(root, [])
    return files, folders, unrelated


def check_removable(path: str | os.PathLike, flag: str = "--out") -> None:
    """Refuse (one line, nothing deleted) --force on a folder holding anything trainprof did
    not write there. (The caller first removes a killed command's temp files, ours by name
    and dead pid: atomic.clean_stale.)"""
    root = Path(path)
    if not root.is_dir():
        return
    _, _, unrelated = _inventory(root)
    if unrelated:
        first = unrelated[0].relative_to(root).as_posix()
        more = f" (and {len(unrelated) - 1} more)" if len(unrelated) > 1 else ""
        raise UsageError(f"{flag} {path}: holds {first!r}{more}, which trainprof did not write (no "
                         f"{NAME} there lists it); --force replaces only trainprof's own output, so nothing "
                         "was removed: move it away or choose another folder")


def check_replaceable(folder: str | os.PathLike, names: list[str], flag: str = "--out") -> None:
    """A command that adds named files to an existing folder (`report --out DIR2 --force`)
    may replace those of them that trainprof wrote there, and no other file."""
    root = Path(folder)
    mine = read(root) or (set(), set())
    for name in names:
        if os.path.lexists(root / name) and name not in mine[0]:
            raise UsageError(f"{flag} {folder}: its {name} was not written by trainprof (no {NAME} there lists "
                             "it); nothing was replaced: move it away or choose another folder")


def remove(path: str | os.PathLike, flag: str = "--out") -> None:
    """--force: remove what trainprof wrote in `path` (the folder itself stays, empty), after
    checking that nothing else is there."""
    root = Path(path)
    if not root.is_dir():
        return
    check_removable(root, flag)
    files, folders, _ = _inventory(root)
    try:
        for f in files:
            f.unlink(missing_ok=True)
        for d in folders:  # deepest first (appended after their contents)
            d.rmdir()
    except OSError as e:
        raise InputError(f"{flag} {path}: cannot remove trainprof's old output ({e.strerror}: {e.filename})") from None
    with _lock:  # a tracked folder starts over: what it listed is gone
        if root.absolute() in _roots:
            _roots[root.absolute()] = (set(), set())


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
