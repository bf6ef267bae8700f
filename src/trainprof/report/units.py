"""Unit conversion at the edge: records hold seconds and bytes; people read ms and GiB."""

from __future__ import annotations


def ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds * 1e3:,.1f} ms" if seconds < 10 else f"{seconds:,.2f} s"


def gib(n: int | None) -> str:
    if n is None:
        return "—"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n} B"


def pct(fraction: float | None, digits: int = 1) -> str:
    return "—" if fraction is None else f"{100 * fraction:.{digits}f}%"


def share(part: float, whole: float) -> str:
    return "—" if whole <= 0 else f"{100 * part / whole:.1f}%"


def num(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"
