"""Parsing of the list-valued bench flags: `--sizes 4K,1M`, `--sizes 1024,4096x4096x8192`.

Each parser names the flag in its error, so a typo prints one line (`UsageError`, exit 2).
"""

from __future__ import annotations

import re

from trainprof.errors import UsageError

# nccl-tests' -b/-e take K/M/G suffixes as powers of 1024; so do we (KiB, MiB, GiB).
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_BYTES = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_list(text: str, flag: str) -> tuple[str, ...]:
    """'a, b,c' → ('a', 'b', 'c'); an empty item is an error, duplicates are dropped."""
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise UsageError(f"{flag} {text!r}: expected a comma-separated list")
    return tuple(dict.fromkeys(items))


def parse_choices(text: str, flag: str, choices: tuple[str, ...]) -> tuple[str, ...]:
    items = tuple(t.lower() for t in parse_list(text, flag))
    bad = [t for t in items if t not in choices]
    if bad:
        raise UsageError(f"{flag} {','.join(bad)}: expected one or more of {','.join(choices)}")
    return items


def parse_bytes(text: str, flag: str) -> int:
    """'4K' → 4096, '1.5M' → 1572864, '256MiB', '1G', '100' (bytes)."""
    m = _BYTES.match(text)
    if not m:
        raise UsageError(f"{flag} {text!r}: expected a size like 4096, 64K, 16M or 1G")
    n = int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    if n <= 0:
        raise UsageError(f"{flag} {text!r}: a size must be > 0 bytes")
    return n


def parse_sizes(text: str, flag: str) -> tuple[int, ...]:
    return tuple(parse_bytes(t, flag) for t in parse_list(text, flag))


def parse_shape(text: str, flag: str) -> tuple[int, int, int]:
    """'1024' → (1024, 1024, 1024); '4096x4096x8192' → (M, N, K) as in mamf-finder."""
    parts = text.lower().split("x")
    if len(parts) not in (1, 3) or not all(p.strip().isdigit() for p in parts):
        raise UsageError(f"{flag} {text!r}: expected N (a square N×N×N) or MxNxK")
    dims = tuple(int(p) for p in parts) * (3 if len(parts) == 1 else 1)
    if min(dims) <= 0:
        raise UsageError(f"{flag} {text!r}: dimensions must be > 0")
    return dims  # type: ignore[return-value]


def parse_shapes(text: str, flag: str) -> tuple[tuple[int, int, int], ...]:
    return tuple(dict.fromkeys(parse_shape(t, flag) for t in parse_list(text, flag)))


def parse_ints(text: str, flag: str, *, minimum: int = 0) -> tuple[int, ...]:
    out = []
    for t in parse_list(text, flag):
        if not t.lstrip("-").isdigit() or int(t) < minimum:
            raise UsageError(f"{flag} {t!r}: expected integers ≥ {minimum}")
        out.append(int(t))
    return tuple(out)


def human_bytes(n: int) -> str:
    """4096 → '4K', 1572864 → '1.5M' (the inverse of parse_bytes, for tables)."""
    for unit in ("T", "G", "M", "K"):
        if n >= _UNITS[unit]:
            v = n / _UNITS[unit]
            return f"{v:g}{unit}" if v == int(v) or v >= 100 else f"{v:.3g}{unit}"
    return f"{n}B"
