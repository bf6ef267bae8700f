"""Output folders: a command's default folder (runs/<timestamp>), and the checks on --out made
before any expensive work (issue #19: `memory` failed after 126 s).

What may be replaced with --force is what trainprof wrote there, listed in the folder's
manifest (owned.py); leftovers of a killed command are recognised by their name (atomic.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from trainprof import owned
from trainprof.atomic import STALE_NAME, clean_stale


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


def out_or_fresh(arg: str | os.PathLike | None, *, force: bool = False, name: str = "{stamp}") -> Path:
    """A command's output folder: --out checked now (`check_out`: a parent that is a file, a
    folder holding files we did not write, fails before any work), or a fresh `runs/<name>`."""
    return fresh_dir(name) if arg is None else check_out(arg, force=force)


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
        if not (force or merge) and any(not STALE_NAME.match(e.name) for e in os.scandir(p)):
            raise UsageError(f"{flag} {p}: exists and is not empty; pass --force to replace what trainprof "
                             "wrote there (nothing was written)")
        if force and not merge:
            owned.refuse_link(p, flag)  # before anything is removed through it
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
    owned.refuse_link(path, flag)
    if Path(path).is_dir():
        clean_stale(path)
    owned.remove(path, flag)
