"""The roofline section's rows: the top operators of the top-5 table with their roofline
block (analysis/cost/roofline_top.py), so the table, the chart and the count of bounds all read
the same rows and the same times. A record written before the block existed falls back to
the by-shape points (`roofline_points`), and the section says so."""

from __future__ import annotations

from typing import Any

from trainprof.recordtypes.base import or_default

K = 5  # the assignment's top five


def top_rows(rank: Any, k: int = K) -> list[tuple[Any, Any]]:
    """(top-ops row, its roofline block) for the first k rows; [] when the record has no blocks
    (an older record: the by-shape points then), or when no row is priced and the trace has no
    priced shape at all (no input shapes: every report then says "no roofline", not a table of
    dashes). Top rows that are all unpriced in a trace with shapes still show, each saying why."""
    rows = [(o, or_default(o.roofline, None)) for o in (rank.top_ops or [])[:k]]
    if not any(rf is not None for _, rf in rows):
        return []
    if not any(rf is not None and rf.flops is not None for _, rf in rows) and not rank.roofline_points:
        return []
    return rows


def as_points(rows: list[tuple[Any, Any]]) -> list[dict[str, Any]]:
    """The rows as the point dicts the roofline charts draw (time = the row's total_us)."""
    out = []
    for o, rf in rows:
        if rf is None or rf.intensity is None:
            continue
        out.append({"name": o.name, "intensity": rf.intensity, "achieved_tflops": rf.achieved_tflops,
                    "attainable_tflops": rf.attainable_tflops, "roofline_pct": rf.roofline_pct, "bound": rf.bound,
                    "dtype": rf.dtype, "device_time_us": or_default(o.total_us, None), "flops": rf.flops,
                    "bytes": rf.bytes, "count": rf.calls_priced, "class": None})
    return out


def bounds_sentence(rows: list[tuple[Any, Any]]) -> str:
    """`Of the top five, 3 are compute-bound, 1 memory-bound, 0 latency-bound and 1 has no FLOP
    formula`, counted from the rows shown."""
    b = [rf.bound if rf is not None else None for _, rf in rows]
    n = len(rows)
    what = {5: "five", 4: "four", 3: "three", 2: "two", 1: "one"}.get(n, str(n))
    text = (f"Of the top {what}, {b.count('compute')} are compute-bound, {b.count('memory')} memory-bound and "
            f"{b.count('latency')} latency-bound")
    unpriced = sum(1 for _, rf in rows if rf is None or rf.flops is None)
    no_roof = [rf.dtype or "unknown" for _, rf in rows if rf is not None and rf.flops is not None and rf.bound is None]
    if unpriced:
        text += f"; {unpriced} {'has' if unpriced == 1 else 'have'} no FLOP formula or shapes"
    if no_roof:
        one = len(no_roof) == 1
        text += (f"; {len(no_roof)} {'has' if one else 'have'} no roof for {'its' if one else 'their'} dtype "
                 f"({', '.join(sorted(set(no_roof)))})")
    return text + (" (far below both roofs: launch or per-call overhead dominates)." if "latency" in b else ".")
