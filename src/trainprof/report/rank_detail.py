"""Which ranks of a job the terminal prints in full. Every rank's tables run to ~130 lines, so a
32-rank job printed 4,283 lines (measured), the job's own tables at the very end. Beyond DETAIL_RANKS
ranks the terminal shows the first rank, the slowest per step and the compute stragglers
(the job table that follows lists every rank's per-step figures); analysis.json keeps every
rank's record, and `analyze --all-ranks` prints them all."""

from __future__ import annotations

from trainprof.recordtypes.analysis import Analysis
from trainprof.recordtypes.base import or_default

DETAIL_RANKS = 4  # the most ranks printed in full unless asked for all


def detail_ranks(result: Analysis, most: int | None) -> list[tuple[int, str]]:
    """(index in result.ranks, why) of the ranks to print in full, in record order: all of them
    (why "") when `most` is None or the job has no more ranks than that."""
    n = len(result.ranks)
    if most is None or n <= most:
        return [(i, "") for i in range(n)]
    where: dict[int, int] = {}
    for i, r in enumerate(result.ranks):
        where.setdefault(r.rank, i)
    why: dict[int, list[str]] = {0: ["first"]}
    mr = result.multi_rank
    rows = [r for r in (or_default(mr.per_rank, None) or [] if mr else []) if r.step_time_us is not None]
    if rows:
        slow = max(rows, key=lambda r: (r.step_time_us, -r.rank)).rank
        if slow in where:
            why.setdefault(where[slow], []).append("slowest step")
    for s in (mr.stragglers if mr else []):
        if s.rank in where:
            why.setdefault(where[s.rank], []).append("computes more while the others wait")
    chosen = sorted(why)[:most]
    return [(i, ", ".join(why[i])) for i in chosen]


ALL_HERE = "--all-ranks prints every rank's tables here"


def left_out_note(result: Analysis, shown: list[tuple[int, str]], hint: str = ALL_HERE) -> str | None:
    """The line after the ranks printed, when some were left out (`hint`: how to see them all);
    None otherwise."""
    n = len(result.ranks)
    if len(shown) == n:
        return None
    names = "; ".join(f"rank {result.ranks[i].rank} ({w})" for i, w in shown)
    return (f"Full tables above for {len(shown)} of the {n} ranks: {names}. The job's tables below list every "
            f"rank; analysis.json holds each rank's record; {hint}.")
