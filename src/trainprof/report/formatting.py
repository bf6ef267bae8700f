"""How every report writes a number: the one formatting module (issue #44 item 5).

Records hold seconds, microseconds, bytes, fractions and percentages, each named by its unit
(`idle_us`, `share_pct`, `mfu`); people read ms, GiB and %. One function per kind of number,
named so a call says what it is given: `duration(v, "us")` / `duration(v, "s", "wall")`,
`signed_us`, `size`, `pct_of_fraction` (0.25 -> 25.0%) and `pct_value` (25.0 -> 25.0%). The
terminal's tables, report.md's and report.html's filters (report/templating.py) and
report/figures.FORMATS all call these. A value that is null or absent from the file
(msgspec's UNSET, recordtypes/) shows as —."""

from __future__ import annotations

from msgspec import UNSET

from trainprof.recordtypes.run_parts import PeakMeasurement


def _missing(v: object) -> bool:
    return v is None or v is UNSET


# A duration climbs one ladder of units, chosen by what it measures:
#   "profile": µs below 1 ms, ms below 10 s, then s (kernels, ops, steps in a trace; `ms_digits`: ms decimals)
#   "step": ms below 10 s, then s (a measured step; never µs: a step of 0.5 ms reads "0.5 ms")
#   "wall": s below 90 s, then minutes to a tenth (a study's stages, progress; "0.0 min left" with 2 s to go)
#   "plan": hours, days from a day, years from a year (time to train a planned job)
LADDERS = ("profile", "step", "wall", "plan")
_YEAR = 365 * 86400


def duration(v: float | None, unit: str, ladder: str = "profile", ms_digits: int = 1) -> str:
    """A duration `v` held in `unit` ("us" or "s", as its record field says) as text on `ladder`
    (LADDERS); — when the record lacks it. Each branch keeps the arithmetic it always had (a value
    is never converted twice), so a figure reads the same in every report, to the last digit."""
    if _missing(v):
        return "—"
    if ladder == "profile":
        if unit == "s":
            v = v * 1e6
        a = abs(v)
        if a < 1000:
            return f"{v:,.1f} µs"
        return f"{v / 1e3:,.{ms_digits}f} ms" if a < 1e7 else f"{v / 1e6:,.2f} s"
    s = v / 1e6 if unit == "us" else v
    if ladder == "step":
        return f"{s * 1e3:,.1f} ms" if s < 10 else f"{s:,.2f} s"
    if ladder == "wall":
        return f"{s:.0f} s" if s < 90 else f"{s / 60:.1f} min"
    if ladder == "plan":
        if s >= _YEAR:
            return f"{s / _YEAR:,.1f} years"
        return f"{s / 86400:,.1f} days" if s >= 86400 else f"{s / 3600:,.1f} hours"
    raise ValueError(f"duration ladder {ladder!r}: one of {', '.join(LADDERS)}")


def signed_us(v: float | None, ms_digits: int = 1) -> str:
    """A difference of two durations in µs (a diff's Δ): its sign (− and ± as typeset) and the
    size on the profile ladder."""
    if _missing(v):
        return "—"
    return ("+" if v > 0 else "−" if v < 0 else "±") + duration(abs(v), "us", ms_digits=ms_digits)


def size(n: int | None, si: bool = False) -> str:
    """A byte count: binary units (GiB, MiB, KiB; two decimals), or with `si` decimal ones (GB,
    MB, KB; one decimal: link traffic, as NCCL's tests and vendors' GB/s count it)."""
    if _missing(n):
        return "—"
    steps = (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)) if si else (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))
    for unit, scale in steps:
        if n >= scale:
            return f"{n / scale:,.1f} {unit}" if si else f"{n / scale:,.2f} {unit}"
    return f"{n} B"


def pct_of_fraction(fraction: float | None, digits: int = 1) -> str:
    """A fraction (0.25) in percent: `25.0%`."""
    return "—" if _missing(fraction) else f"{100 * fraction:.{digits}f}%"


def pct_value(v: float | None, digits: int = 1) -> str:
    """A value already in percent (a record's `*_pct`, 25.0): `25.0%`."""
    return "—" if _missing(v) else f"{v:.{digits}f}%"


def num(x: float | None, digits: int = 3) -> str:
    return "—" if _missing(x) else f"{x:,.{digits}f}"


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
