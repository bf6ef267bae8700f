"""SOURCE arguments of `trainprof analyze` -> the trace locations of a job.

A SOURCE is a trace file, a folder (its *.json / *.json.gz files, not recursive), a glob
(`runs/job7/rank*.json.gz`, quoted so the shell leaves it alone), or an fsspec URL
(`file://`, `s3://bucket/job7/` with s3fs, `gs://` with gcsfs, `http(s)://`, `memory://` in
tests), which may itself be a folder or a glob. Local paths stay plain paths; remote traces
stay URLs, and whoever analyses one reads it from storage (engines.py, fetch()).

Only those protocols are accepted (PROTOCOLS). fsspec knows dozens more, and some read
through other files in ways we never tested: `zip://` and `tar://` open an archive
(BadZipFile/ReadError tracebacks, issue #33), `reference://` follows a JSON of references to
other URLs, `jupyter://` talks to a server, and a chained URL (`simplecache::s3://...`,
`zip://x::file.zip`) stacks them. Each is refused with one line before fsspec sees it.

http(s) has no folders: an http(s) URL names one trace file and is never listed. fsspec's
"listing" of an http URL downloads the page whole to parse its links: two http URLs made it read
a streaming server's endless body into memory (5.9 GB RSS before `ulimit -v` stopped it, issue #45).
Every http(s) request has a connect and a read timeout (TRAINPROF_URL_TIMEOUT_S, default 30 s):
a server that never answers, or sends headers then silence, is one line, not a hang.
"""

from __future__ import annotations

import errno
import glob as globmod
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from trainprof.errors import InputError, UsageError

TRACE_SUFFIXES = (".json", ".json.gz")
PROTOCOLS = ("file", "s3", "gs", "http", "https", "memory")  # the ones our tests and docs cover
_GLOB_CHARS = frozenset("*?[")
HTTP = ("http", "https")
ENV_URL_TIMEOUT = "TRAINPROF_URL_TIMEOUT_S"
DEFAULT_URL_TIMEOUT_S = 30.0  # connect, and each read: a live server answers in well under a second


def url_timeout_s() -> float:
    """Seconds an http(s) server may take to accept, and between two pieces of its answer."""
    raw = os.environ.get(ENV_URL_TIMEOUT, "").strip()
    if not raw:
        return DEFAULT_URL_TIMEOUT_S
    try:
        t = float(raw)
    except ValueError:
        t = -1.0
    if not 0 < t <= 86_400:
        raise UsageError(f"{ENV_URL_TIMEOUT}={raw!r}: expected seconds, more than 0 and at most 86400")
    return t


def _is_http(url: str) -> bool:
    return url.partition("://")[0].lower() in HTTP


def is_url(source: str) -> bool:
    """`scheme://...` with a plain scheme (s3, gs, memory, file, ...); a local path that only
    contains "://" further on is not one."""
    scheme, sep, _ = source.partition("://")
    return bool(sep) and scheme.replace("+", "").replace("-", "").replace(".", "").isalnum()


def _has_glob(s: str) -> bool:
    return any(c in _GLOB_CHARS for c in s)


def _is_trace(name: str) -> bool:
    return name.endswith(TRACE_SUFFIXES)


def check_protocol(source: str) -> None:
    """Refuse (one line) a URL whose protocol is not one of PROTOCOLS, or a chained one."""
    if "://" not in source:
        return
    scheme = source.partition("://")[0]
    if "::" in source:
        raise InputError(f"{source}: chained fsspec URLs ('::') are not accepted; "
                         f"use a plain {'://, '.join(PROTOCOLS)}:// URL or a local path")
    if is_url(source) and scheme.lower() not in PROTOCOLS:
        raise InputError(f"{source}: the {scheme}:// protocol is not accepted; use a local path or a "
                         f"{'://, '.join(PROTOCOLS)}:// URL (unpack archives first)")


def expand(sources: list[str]) -> list[str]:
    """Every trace the SOURCE arguments name, in argument order, each folder/glob sorted."""
    out: list[str] = []
    for s in sources:
        check_protocol(s)
        if s.startswith("file://"):
            s = s[len("file://"):]
        out.extend(_expand_url(s) if is_url(s) else _expand_local(s))
    return out


def _expand_local(s: str) -> list[str]:
    from trainprof.bounded import describe

    p = Path(s)
    try:
        mode = os.stat(p).st_mode  # not Path.exists(): it calls a symlink loop "missing"
    except OSError as e:
        if e.errno == errno.ENOENT and _has_glob(s):
            found = sorted(f for f in globmod.glob(s) if _is_trace(f) and os.path.isfile(f))
            if not found:
                raise InputError(f"{s}: no trace file (*.json, *.json.gz) matches") from None
            return found
        missing = e.errno == errno.ENOENT
        raise InputError(f"{p}: " + ("no such file or folder" if missing else describe(e))) from None
    if stat.S_ISDIR(mode):
        try:
            found = sorted(str(f) for f in p.iterdir() if f.is_file() and _is_trace(f.name))
        except OSError as e:
            raise InputError(f"{p}: cannot list the folder ({describe(e)})") from None
        if not found:
            raise InputError(f"{p}: folder holds no trace files (*.json, *.json.gz)")
        return found
    return [str(p)]


def _fs(url: str):  # noqa: ANN202
    check_protocol(url)  # every fsspec call comes through here (fetch() runs on Ray workers too)
    try:
        import fsspec
    except ImportError:  # pragma: no cover - a dependency
        raise InputError(f"{url}: reading URLs needs fsspec (pip install fsspec)") from None
    kwargs = {}
    if _is_http(url):
        import aiohttp  # fsspec's http filesystem is built on it

        t = url_timeout_s()
        kwargs["client_kwargs"] = {"timeout": aiohttp.ClientTimeout(total=None, sock_connect=t, sock_read=t)}
    try:
        fs, path = fsspec.core.url_to_fs(url, **kwargs)
    except (ImportError, ValueError) as e:
        # e.g. s3:// without s3fs: fsspec names the package to install
        raise InputError(f"{url}: {e}") from None
    return fs, path


def _expand_url(url: str) -> list[str]:
    if _is_http(url):  # one file, never listed (the module's docstring says why)
        check_protocol(url)
        if _has_glob(url.partition("://")[2].partition("?")[0]):
            raise InputError(f"{url}: an http(s) URL names one trace file; globs and folders need s3://, gs:// "
                             "or a local path")
        return [url]
    fs, path = _fs(url)
    try:
        if _has_glob(path):
            found = [p for p in fs.glob(path) if _is_trace(p)]
        elif fs.isdir(path):
            found = [p for p in fs.ls(path, detail=False) if _is_trace(p) and fs.isfile(p)]
        elif fs.exists(path):
            return [url]
        else:
            raise InputError(f"{url}: no such file or folder")
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - credentials, network, permissions: one line
        raise InputError(f"{url}: cannot list ({type(e).__name__}: {e})") from None
    if not found:
        raise InputError(f"{url}: no trace file (*.json, *.json.gz) there")
    return [fs.unstrip_protocol(p) for p in sorted(found)]


def _timed_out(e: BaseException) -> bool:
    import asyncio

    seen = 0
    while e is not None and seen < 8:  # fsspec wraps aiohttp's timeout in its own errors
        if isinstance(e, (asyncio.TimeoutError, TimeoutError)) or type(e).__name__.endswith("TimeoutError"):
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False


@contextmanager
def fetch(source: str) -> Iterator[str]:
    """A local path for one trace: the path itself, or a temporary copy of a URL streamed from
    storage in 8 MB pieces (deleted afterwards). The reader's own bounds (regular file, size
    cap, depth) then apply to the copy; the copy stops at the same cap as the reader."""
    if not is_url(source):
        yield source
        return
    from trainprof.bounded import max_bytes, too_big

    fs, path = _fs(source)
    cap = max_bytes()
    suffix = ".json.gz" if path.endswith(".gz") else ".json"
    fd, tmp = tempfile.mkstemp(prefix="trainprof-fetch-", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as dst:
            try:
                # block_size=0: a stream read piece by piece (the cap below applies as it comes), never a
                # whole body held for random access
                with fs.open(path, "rb", **({"block_size": 0} if _is_http(source) else {})) as src:
                    copied = 0
                    while piece := src.read(8 << 20):
                        copied += len(piece)
                        if copied > cap:
                            raise too_big(source, cap)
                        dst.write(piece)
            except InputError:
                raise
            except Exception as e:  # noqa: BLE001 - storage errors name the URL, in one line
                if _timed_out(e):
                    raise InputError(f"{source}: no answer within {url_timeout_s():g} s (set {ENV_URL_TIMEOUT} "
                                     "for a slower server)") from None
                raise InputError(f"{source}: cannot read ({type(e).__name__}: {e})") from None
        yield tmp
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass

