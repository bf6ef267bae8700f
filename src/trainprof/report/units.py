"""Unit conversion at the edge: records hold seconds and bytes; people read ms and GiB.
A value that is null or absent from the file (msgspec's UNSET, recordtypes/) shows as —."""

from __future__ import annotations

from msgspec import UNSET

from trainprof.recordtypes.run_parts import PeakMeasurement


def ms(seconds: float | None) -> str:
    if seconds is None or seconds is UNSET:
        return "—"
    return f"{seconds * 1e3:,.1f} ms" if seconds < 10 else f"{seconds:,.2f} s"


def gib(n: int | None) -> str:
    if n is None or n is UNSET:
        return "—"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n} B"


def pct(fraction: float | None, digits: int = 1) -> str:
    return "—" if fraction is None or fraction is UNSET else f"{100 * fraction:.{digits}f}%"


def share(part: float, whole: float) -> str:
    return "—" if whole <= 0 else f"{100 * part / whole:.1f}%"


def num(x: float | None, digits: int = 3) -> str:
    return "—" if x is None or x is UNSET else f"{x:,.{digits}f}"


def us(v: float | None, ms_digits: int = 1) -> str:
    """Microseconds as µs, as ms from 1 ms up and as s from 10 s up (like `ms`); the one
    format of a time in every report (report/figures.py)."""
    if v is None or v is UNSET:
        return "—"
    a = abs(v)
    if a < 1000:
        return f"{v:,.1f} µs"
    return f"{v / 1e3:,.{ms_digits}f} ms" if a < 1e7 else f"{v / 1e6:,.2f} s"


def pv(v: float | None, digits: int = 1) -> str:
    """A value already in percent."""
    return "—" if v is None or v is UNSET else f"{v:.{digits}f}%"


def shapes(dims: object, *, times: str = "×", sep: str = ", ", tensor_lists: bool = True,
           gaps: bool = False) -> str:
    """A profiler op's "Input Dims" ([[64, 768], [], [[2, 3], [2, 3]]]) as text: each tensor's
    shape joined by `times`; a list of tensors as "[N tensors]" (`tensor_lists`); scalars
    left out, or kept as empty slots with `gaps` (so positions still line up)."""
    parts = []
    for x in dims or ():
        if isinstance(x, list) and x and all(isinstance(i, int) for i in x):
            parts.append(times.join(map(str, x)))
        elif tensor_lists and isinstance(x, list) and x and all(isinstance(i, list) for i in x):
            parts.append(f"[{len(x)} tensors]")
        elif gaps:
            parts.append("")
    return sep.join(parts).strip(sep) if gaps else sep.join(parts)


def clip(text: object, width: int) -> str:
    """`text` cut to `width` characters, the last one an ellipsis when cut."""
    s = "" if text is None else str(text)
    return s if len(s) <= width else s[: width - 1] + "…"



NO_STEPS = ("no steps (no ProfilerStep markers and no repeated iteration annotation): every figure "
            "is for the whole trace")


def steps_phrase(n: object, source: object) -> str:
    """How many steps a trace has and where they came from (the record's `steps`, `steps_from`);
    with none, says so: a whole trace is never shown as a step."""
    if not n or n is UNSET:
        return NO_STEPS
    if source in (None, "", "ProfilerStep") or source is UNSET:
        return f"{n} profiler steps"
    return f"{n} steps, from {source}"


def peak_provenance(pm: object) -> str:
    """A measured CPU peak's source, date and load (run.json `device.peak_measurement`) in words,
    e.g. "cached, checked: measured 2026-11-24, others 0.05 of each core"; "" without one."""
    if not isinstance(pm, PeakMeasurement):  # None, or UNSET (a record older than the field)
        return ""
    date = str(pm.measured_at or "")[:10]
    load = pm.others_cpu_share
    when = " ".join(x for x in ("measured", date) if x) + (f", others {load:.2f} of each core" if load is not None else "")
    out = f"cached, checked: {when}" if pm.source == "cached, checked" else when
    if pm.source == "measured" and not pm.cached:
        out += "; not cached"
    if pm.no_native_matmul:
        out += f"; no native {pm.no_native_matmul} matmul: fp32 peak"
    return out
