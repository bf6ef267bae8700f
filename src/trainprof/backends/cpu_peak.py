"""This CPU's measured peaks — dense matmul TFLOP/s per dtype, DRAM copy GB/s — and their cache.

A CPU has no datasheet peak we can trust (turbo, SMT, AVX-512 or not, the thread count), so
MFU and the roofline use what this machine measurably does. A measurement is only as good as
the machine was quiet: on a 2-core VM shared with a test suite, the fp32 peak read 0.0148
TFLOP/s against 0.209 idle, and once cached every later MFU was 14× too high (issue #28).
So each measurement carries its conditions, and the cache is guarded:

* **load recorded**: other processes' CPU use while it ran (`others_cpu_share`, cores per
  core, from the machine's and this process's CPU times, as the run's system sampler counts
  it) and the 1-minute load average per core;
* **not cached under load**: above MAX_OTHERS_SHARE the value is used for this run, with
  the load stated, and measured again next time (processes starting within SHARE_LOADED_S —
  the other ranks of the job, a pool's workers — use it too rather than load the machine
  with one more benchmark each; it is kept apart from the cache, under "loaded");
* **keyed** by CPU model, torch version, intra-op thread count and dtype (`machine_key`): an
  upgrade or a different `--threads` is a different key, measured afresh;
* **checked on use** (once per process: backends/cpu.py): a quick check (a 512³ matmul, or
  three copies; ~0.2 s) is compared with the one taken right after the cached measurement,
  under the same conditions; more than CHECK_TOLERANCE apart, the peak is measured again —
  unless the check was slower while the machine is loaded now (contention explains it, and a
  measurement now could only read lower). A re-measurement under load never replaces a
  quiet cached value it falls below: a peak is a ceiling, and load only lowers it.

* **one process at a time**: a lock beside the file serialises measurements, so the ranks of
  a job (or a pool's workers) do not count each other's benchmarks as load.
* **recent is enough inside a user's program**: each passed check is dated (under "checked");
  the agent takes a value measured or checked less than SHARE_LOADED_S ago as it is (`recent`),
  since its own check would cost a process with torch (backends/cpu_elsewhere.py; `memory --
  COMMAND`'s 4 measurements took 26.7 s with it, 21.9 s without, ~1.2 s each):
  a tune's trials and a study's profiles follow each other within seconds.

File: `$TRAINPROF_CACHE_DIR/cpu_peak.json` (default ~/.cache/trainprof), schema CACHE_VERSION.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from trainprof import atomic

CACHE_VERSION = 3  # 3: entries carry load, date and the quick-check reference
MAX_OTHERS_SHARE = 0.5  # other processes' CPU, cores per core, above which a measurement is not cached
CHECK_TOLERANCE = 0.20  # a quick check further than this from its reference re-measures
SHARE_LOADED_S = 120.0  # a loaded measurement serves other processes starting within this, never later


def cache_dir() -> Path:
    base = os.environ.get("TRAINPROF_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "trainprof")
    return Path(base)


def cache_path() -> Path:
    return cache_dir() / "cpu_peak.json"


@dataclass(frozen=True)
class Load:
    """The machine's load while something was measured."""

    others_cpu_share: float | None  # other processes' CPU time / (wall × cores): 0 idle, 1 all cores
    load_avg_1m_per_core: float | None  # os.getloadavg()[0] / cores at the end (our threads included)

    @property
    def high(self) -> bool:
        return self.others_cpu_share is not None and self.others_cpu_share > MAX_OTHERS_SHARE


class LoadProbe:
    """`with LoadProbe() as p: ...` then `p.load`: what other processes used meanwhile.
    Busy = all cores' CPU time less idle and iowait; ours = this process's user + system time
    with its children's (backends/sensors.HostSensor counts `others_cpu_pct` the same way)."""

    load = Load(None, None)

    def __enter__(self) -> "LoadProbe":
        self._start = _cpu_times()
        return self

    def __exit__(self, *exc: object) -> None:
        end = _cpu_times()
        share = None
        if self._start is not None and end is not None:
            d_busy, d_total, d_own = (b - a for a, b in zip(self._start, end))
            if d_total > 0:
                share = round(min(1.0, max(0.0, (d_busy - d_own) / d_total)), 3)
        try:
            avg = round(os.getloadavg()[0] / (os.cpu_count() or 1), 2)
        except (OSError, AttributeError):
            avg = None
        self.load = Load(share, avg)


def _cpu_times() -> tuple[float, float, float] | None:
    """(busy, total, own) CPU seconds: all cores since boot, and this process with its children."""
    try:
        import psutil

        t = psutil.cpu_times()
        total = sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)  # guest is in user
        p = psutil.Process().cpu_times()
        own = p.user + p.system + getattr(p, "children_user", 0.0) + getattr(p, "children_system", 0.0)
        return total - t.idle - getattr(t, "iowait", 0.0), total, own
    except Exception:  # noqa: BLE001 - no counters (an exotic platform): the load is unknown
        return None


@dataclass(frozen=True)
class Measurement:
    """One peak with where it came from (run.json's `device.peak_measurement`)."""

    value: float  # TFLOP/s (matmul) or GB/s (copy)
    key: str  # machine_key(...) + what was measured
    source: str  # "measured" | "cached, checked"
    measured_at: str  # ISO-8601 UTC date of the measurement behind `value`
    others_cpu_share: float | None  # load during that measurement (Load)
    load_avg_1m_per_core: float | None
    reference: float | None  # the quick check taken with that measurement
    check: float | None  # this use's quick check (a cached value), else None
    cached: bool  # `value` is (now) in the cache
    note: str = ""  # why it was measured again, or why it was not cached

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Clock = Callable[[], str]


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION or not isinstance(data.get("entries"), dict):
        return {}
    return data


def read_cache(path: Path | None = None) -> dict[str, Any]:
    """The cache's entries by key; an unreadable file or an older schema reads as empty."""
    return _read(path or cache_path()).get("entries", {})


def _entry(entries: Any, key: str) -> dict[str, Any] | None:
    """`entries[key]` if it holds a number as its value (and its reference, where it has one),
    else None: a hand-edited file reads as not cached, never as a ValueError in the user's run."""
    e = entries.get(key) if isinstance(entries, dict) else None
    try:
        float(e["value"])
        if e.get("reference") is not None:
            float(e["reference"])
    except (TypeError, KeyError, ValueError, AttributeError):
        return None
    return e


def write_entry(key: str, m: Measurement, path: Path | None = None, section: str = "entries") -> Path | None:
    """Store one measurement (with its load, date and check reference) in `section`: "entries"
    (the cache), or "loaded" (a loaded one, for SHARE_LOADED_S only); None if not writable."""
    path = path or cache_path()
    data = _read(path) or {"version": CACHE_VERSION, "entries": {}}
    data.setdefault(section, {})[key] = {
        "value": m.value, "measured_at": m.measured_at, "others_cpu_share": m.others_cpu_share,
        "load_avg_1m_per_core": m.load_avg_1m_per_core, "reference": m.reference}
    try:
        atomic.write_text(path, json.dumps(data, indent=1))
    except OSError:
        return None  # a read-only home must not stop a run: we measure again next time
    return path


def _recent_loaded(key: str, path: Path | None, now: Clock) -> Measurement | None:
    """A measurement taken under load by another process less than SHARE_LOADED_S ago (a
    sibling rank, a pool worker): used as is rather than loading the machine once more."""
    e = _read(path or cache_path()).get("loaded", {}).get(key)
    age = _age_s(e.get("measured_at"), now) if isinstance(e, dict) else None
    if age is None or not 0 <= age <= SHARE_LOADED_S:
        return None
    return Measurement(float(e["value"]), key, "measured", e["measured_at"], e.get("others_cpu_share"),
                       e.get("load_avg_1m_per_core"), e.get("reference"), None, False,
                       f"measured {age:.0f} s ago by another process while other processes used "
                       f"{e.get('others_cpu_share') or 0:.2f} of each core: not cached")


def _note_checked(key: str, q: float, path: Path | None, now: Clock) -> None:
    """Date a passed check (under the caller's lock), for `recent`."""
    path = path or cache_path()
    data = _read(path)
    if data:
        data.setdefault("checked", {})[key] = {"at": now(), "check": q}
        try:
            atomic.write_text(path, json.dumps(data, indent=1))
        except OSError:
            pass  # a read-only cache: the next process checks for itself


def _age_s(stamp: Any, now: Clock) -> float | None:
    try:
        return (_dt.datetime.fromisoformat(now()) - _dt.datetime.fromisoformat(stamp)).total_seconds()
    except (TypeError, ValueError):
        return None


def recent(key: str, path: Path | None = None, now: Clock = utc_now) -> Measurement | None:
    """The peak under `key` if another process measured it, or checked it against its quick
    check, less than SHARE_LOADED_S ago (a loaded measurement too, as for siblings): taken as
    it is, with no check of its own. None otherwise: then the caller measures or checks."""
    data = _read(path or cache_path())
    e = _entry(data.get("entries"), key)
    if e is not None:
        c = data.get("checked", {}).get(key)
        c = c if isinstance(c, dict) and isinstance(c.get("check"), (int, float)) else {}
        for what, stamp, q in (("checked", c.get("at"), c.get("check")), ("measured", e.get("measured_at"), None)):
            age = _age_s(stamp, now)
            if age is not None and 0 <= age <= SHARE_LOADED_S:
                return Measurement(float(e["value"]), key, "cached, checked", e.get("measured_at", ""),
                                   e.get("others_cpu_share"), e.get("load_avg_1m_per_core"), e.get("reference"),
                                   q, True, f"{what} {age:.0f} s ago by another process")
    return _recent_loaded(key, path, now)


def measure(key: str, bench: Callable[[], float], check: Callable[[], float], *, use_cache: bool = True,
            probe: Callable[[], LoadProbe] | None = None, now: Clock | None = None,
            path: Path | None = None) -> Measurement:
    """The peak under `key`: the cached value if its quick check agrees, else `bench()` (its
    load recorded by `probe`, default LoadProbe; cached unless the load was high). `check()`
    is the quick check. Tests inject all three, and `now`, so nothing is timed for real."""
    if not use_cache:
        return _measure(key, bench, check, None, False, probe or LoadProbe, now or utc_now, path)
    # One measuring process at a time per cache: the ranks of a job (or a pool's workers) start
    # together, and each would count the others' benchmarks as load and cache nothing. The
    # others wait (idle, not load), then find the first one's value and only check it.
    with locked(path or cache_path()):
        entry = _entry(read_cache(path), key)
        return _measure(key, bench, check, entry, True, probe or LoadProbe, now or utc_now, path)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on `path`.lock (POSIX flock; no lock where there is none, or
    where the cache folder cannot be written: then processes may measure at once)."""
    try:
        import fcntl

        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path.with_suffix(".lock"), "a")
    except (ImportError, OSError):
        yield
        return
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _measure(key: str, bench: Callable[[], float], check: Callable[[], float], entry: dict | None,
             use_cache: bool, probe: Callable[[], LoadProbe], now: Clock, path: Path | None) -> Measurement:
    note = ""
    if entry and entry.get("reference"):
        with probe() as p:
            q = float(check())
        ref = float(entry["reference"])
        cached = Measurement(float(entry["value"]), key, "cached, checked", entry.get("measured_at", ""),
                             entry.get("others_cpu_share"), entry.get("load_avg_1m_per_core"), ref, q, True)
        if abs(q / ref - 1.0) <= CHECK_TOLERANCE:
            if use_cache:
                _note_checked(key, q, path, now)
            return cached
        if q < ref and p.load.high:  # contention explains a slow check; measuring now could only read lower
            return _with(cached, note=f"quick check {q:.4g} vs {ref:.4g} while other processes used "
                                      f"{p.load.others_cpu_share:.2f} of each core: the quiet value kept")
        note = f"quick check {q:.4g} vs {ref:.4g} when cached ({100 * (q / ref - 1):+.0f}%): measured again"
    if entry is None and use_cache:
        shared = _recent_loaded(key, path, now)
        if shared is not None:
            return shared
    with probe() as p:
        value = float(bench())
        ref = float(check())
    load = p.load
    m = Measurement(value, key, "measured", now(), load.others_cpu_share, load.load_avg_1m_per_core, ref, None,
                    False, note)
    if load.high:
        why = f"not cached: other processes used {load.others_cpu_share:.2f} of each core while it ran"
        if entry and float(entry["value"]) > value:
            # the cached value was measured quiet; a loaded machine only lowers a peak
            return Measurement(float(entry["value"]), key, "cached, checked", entry.get("measured_at", ""),
                               entry.get("others_cpu_share"), entry.get("load_avg_1m_per_core"),
                               entry.get("reference"), ref, True,
                               f"{note}; the new measurement ({value:.4g}) ran under load and is lower: kept")
        if use_cache:
            write_entry(key, m, path, section="loaded")  # for the siblings starting now, not a cache
        return _with(m, note=f"{note}; {why}" if note else why)
    if use_cache and write_entry(key, m, path) is not None:
        m = _with(m, cached=True)
    return m


def _with(m: Measurement, **changes: Any) -> Measurement:
    return Measurement(**{**asdict(m), **changes})
