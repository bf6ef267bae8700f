"""Short display names for operators and kernels, told apart (terminal, report.md, report.html).

A kernel name is often a C++ signature of hundreds of characters, and a table has room for
forty. Cutting every name at the same width makes look-alikes identical: two cuDNN
batch-norm kernels that differ only in a template argument both read
`cudnn::bn_bw_1C11_kernel_new<float, f…`. So names are shortened *as a set*, the rows of one
table: a name that fits stays whole; a long name is cut with "…"; and where two different
names would shorten alike, each keeps its head and shows, after a "…", the part where it
first differs from the others (`cudnn::bn_bw_1C11_…128, true, 1>(flo…` vs
`cudnn::bn_bw_1C11_…32, true, 1>(floa…`). Equal names stay equal (the roofline lists one
operator once per input shape: the shapes column tells those apart). Every renderer calls
`short_names`; the full name stays in the record (and in report.html's hover title).
"""

from __future__ import annotations

from trainprof.report.formatting import clip

from collections import defaultdict
from typing import Iterable

# Prefixes that carry no information in a table of kernels (the terminal used to drop them
# alone, so the three reports showed different names for one kernel).
NOISE = ("void ", "(anonymous namespace)::", "at::native::")
TOKEN_BREAK = " ,<>()[]_:"  # a distinguishing part starts after one of these...
MAX_BACK = 12  # ...at most this many characters before the first differing one


def denoise(name: object) -> str:
    s = "" if name is None else str(name)
    for noise in NOISE:
        s = s.replace(noise, "")
    return s


def _common(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _with_suffix(name: str, at: int, width: int) -> str:
    """`name`'s head, "…", then the part from `at` (the first character that tells it from its
    look-alikes), backed up to the start of its token so the part reads as a word."""
    start = at
    while start > 0 and at - start < MAX_BACK and name[start - 1] not in TOKEN_BREAK:
        start -= 1
    room = max(8, width // 2)  # the distinguishing part gets half the width
    tail = name[start:]
    if len(tail) > room:
        tail = tail[: room - 1] + "…"
    head = name[: max(1, width - 1 - len(tail))]
    return head + "…" + tail


def short_names(names: Iterable[object], width: int = 40) -> list[str]:
    """The display form of each name of one table, at most `width` characters, different
    names never shown alike (deterministic: the same names give the same strings)."""
    clean = [denoise(n) for n in names]
    out = [clip(c, width) for c in clean]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(out):
        groups[s].append(i)
    for idx in groups.values():
        if len({clean[i] for i in idx}) < 2:
            continue
        for i in idx:
            at = max(_common(clean[i], clean[j]) for j in idx if clean[j] != clean[i])
            out[i] = _with_suffix(clean[i], at, width)
    # Look-alikes whose distinguishing parts still collide (names equal for `width` characters
    # after the point where they part): number them in table order.
    seen: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(out):
        seen[s].append(i)
    for s, idx in seen.items():
        if len({clean[i] for i in idx}) < 2:
            continue
        firsts = list(dict.fromkeys(clean[i] for i in idx))
        for i in idx:
            tag = f" #{firsts.index(clean[i]) + 1}"
            out[i] = s[: width - len(tag)] + tag
    return out


def short_name(name: object, width: int = 40) -> str:
    """One name on its own (no table to tell it from): denoised and cut with "…"."""
    return clip(denoise(name), width)
