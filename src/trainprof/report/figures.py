"""Every figure a report shows: one formatter per kind of number, named by its record field.

The terminal, report.md and report.html print a number through `show(value, fmt, field)`:
the same field always reads the same (`336.4 ms`, never `336.42 ms` in one report and
`336.4 ms` in another), and the renderer says which field of which record the number is.
`field` is the number's path in the file as written (JSON names), from the record's name:

    analysis.ranks[0].temporal_breakdown.idle_us
    run.summary.phase_split.data_s.mean_share_pct
    analysis.ranks[0].critical_path.steps[1].share_pct["kernel:gemm"]

`capture()` lists what a renderer showed (field, value, text); the consistency test
(tests/integration/test_report_consistency.py) renders the three reports of every shipped
trace and report folder, reads each field back with `resolve`, and checks that each shown
value is that field's value and that a field shown in several places reads the same in
all of them. Outside a capture, `show` only formats (one context-variable read).

`LABELS` names the quantities a reader could confuse (three "communication" figures with
three meanings, idle over two windows): every renderer takes their names from here.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from msgspec import UNSET

from trainprof.report.formatting import duration, pct_of_fraction, pct_value, size, steps_phrase


@dataclass(frozen=True)
class Shown:
    """One figure as a renderer printed it."""

    field: str
    value: Any
    fmt: str
    text: str


_CAPTURE: contextvars.ContextVar[list[Shown] | None] = contextvars.ContextVar("trainprof_figures", default=None)


def _missing(v: Any) -> bool:
    return v is None or v is UNSET or type(v).__name__ == "Undefined"  # jinja2.Undefined, without importing it


# fmt -> formatter of a known value (a missing one shows as —); each calls report/formatting.py
FORMATS: dict[str, Callable[[Any], str]] = {
    "us": lambda v: duration(v, "us"),  # microseconds: µs below 1 ms, ms below 10 s, then s
    "s": lambda v: duration(v, "s"),  # seconds, shown like "us"
    "wall": lambda v: duration(v, "s", "wall"),  # a wall time of minutes (a study's stages)
    "pct_value": pct_value,  # a value already in percent (a record's *_pct)
    "pct_value0": lambda v: pct_value(v, 0),
    "pct_of_fraction": pct_of_fraction,  # a fraction shown in percent
    "pct_of_fraction0": lambda v: pct_of_fraction(v, 0),
    "int": lambda v: f"{int(v):,}",
    "x2": lambda v: f"{v:.2f}×",
    "x3": lambda v: f"{v:.3f}×",
    "bytes": lambda v: size(int(v)),
    "g3": lambda v: f"{v:.3g}",  # three significant digits (FLOP/B, TFLOP/s)
    "num3": lambda v: f"{v:,.3f}",
    "num2": lambda v: f"{v:,.2f}",
    "num1": lambda v: f"{v:,.1f}",
    "num0": lambda v: f"{v:,.0f}",
    "signed3": lambda v: f"{v:+.3f}",  # a difference (Δ validation loss)
}


def show(value: Any, fmt: str, field: str) -> str:
    """`value` (the record's `field`) as text; — when the record lacks it."""
    text = "—" if _missing(value) else FORMATS[fmt](value)
    cap = _CAPTURE.get()
    if cap is not None:
        cap.append(Shown(field, None if _missing(value) else value, fmt, text))
    return text


def temporal_note(steps: Any) -> str:
    """The GPU-time table's note: HTA's window, said without steps for a trace that has none."""
    return LABELS["temporal_note"] if steps and not _missing(steps) else LABELS["temporal_note.no_steps"]


def hta_idle_note(tb: Any, field: str) -> str:
    """Where HTA's idle differs from ours (`field`: the rank's temporal_breakdown), both
    figures as the record holds them: HTA's selection drops GPU work whose launch the trace
    lacks and calls the time it ran idle (analysis/timeline/context.py); "" where they agree."""
    hta, ours = getattr(tb, "hta_idle_us", None), getattr(tb, "idle_us", None)
    if _missing(hta) or _missing(ours) or hta == ours:
        return ""
    return (f"HTA would report idle {show(tb.hta_idle_pct, 'pct_value', field + '.hta_idle_pct')} "
            f"({show(hta, 'us', field + '.hta_idle_us')}) over this window: its selection drops the GPU work whose "
            "launch the trace lacks and counts the time that work ran as idle")


def steps_shown(n: Any, source: Any, field: str) -> str:
    """formatting.steps_phrase with the step count shown through `show` (`field`: the rank's
    `steps`); a trace without steps says so, and shows no count."""
    return steps_phrase(show(n, "int", field) if n and not _missing(n) else 0, source)


@contextlib.contextmanager
def capture() -> Iterator[list[Shown]]:
    """Collect every figure shown inside the block (this thread/context only)."""
    shown: list[Shown] = []
    token = _CAPTURE.set(shown)
    try:
        yield shown
    finally:
        _CAPTURE.reset(token)


_PATH = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]')


def key(name: str) -> str:
    """A dict key as a path step: `["kernel:gemm"]`."""
    return '["' + name.replace("\\", "\\\\").replace('"', '\\"') + '"]'


def resolve(records: dict[str, Any], field: str) -> Any:
    """The value at `field` in `records` ({"analysis": <the file as builtins>, ...}); KeyError
    naming the path when the records have no such field."""
    head, _, rest = field.partition(".")
    head, bracket, tail = head.partition("[")
    rest = (bracket + tail + ("." + rest if rest else "")) if bracket else ("." + rest if rest else "")
    obj = records[head]
    pos = 0
    while pos < len(rest):
        m = _PATH.match(rest, pos)
        if not m:
            raise KeyError(f"{field}: cannot parse at {rest[pos:]!r}")
        name, index, quoted = m.groups()
        if name is not None:
            obj = obj[name]
        elif index is not None:
            obj = obj[int(index)]
        else:
            obj = obj[re.sub(r"\\(.)", r"\1", quoted)]
        pos = m.end()
    return obj


def same_value(shown: Any, recorded: Any) -> bool:
    """A shown value is its field's value (floats: exactly, or both not finite)."""
    if isinstance(shown, float) and isinstance(recorded, (int, float)) and not isinstance(recorded, bool):
        return shown == recorded or (not math.isfinite(shown) and not math.isfinite(recorded))
    return shown == recorded


# The names of quantities that are easy to confuse, used by every renderer. The GPU-time
# table is HTA's temporal breakdown over HTA's window (analysis/timeline/temporal.py: with two or
# more profiler steps, the GPU work launched before the last one began); the idle causes
# are that window's gaps (analysis/timeline/idle.py), the communication block covers the whole trace
# (analysis/timeline/communication.py).
LABELS = {
    "temporal": "GPU time, HTA's window",
    "temporal_note": ("HTA's window: with two or more profiler steps, it ends with the GPU work launched before "
                      "the last step began (the last step is often cut short); all GPU work inside it counts. "
                      "Exposed comm.: communication not under "
                      "compute. The idle causes are this window's gaps; the communication line covers the whole trace"),
    # a trace without steps: its window is the whole trace (no step wording for a whole trace)
    "temporal_note.no_steps": ("HTA's window: without steps, every GPU activity of the trace. Exposed comm.: "
                               "communication not under compute. The idle causes are this window's gaps; the "
                               "communication line covers the whole trace"),
    "temporal.communication": "exposed comm.",
    "idle": "Why the GPU was idle, HTA's window",
    "communication": "Communication kernels, whole trace",
    "communication.union": "collectives' time",
    "communication.overlap": "under compute",
    "communication.exposed": "exposed (not under compute)",
    # analysis.multi_rank.device_timeline False (a CPU job): what its per-rank table leaves out
    "ranks.host_only": ("CPU-only traces: each rank's step is its host ProfilerStep range (median); compute, "
                        "communication, idle and waiting are device-timeline figures these traces do not have, "
                        "so they are not shown. The waits at the matched collectives say who waited for whom"),
}
