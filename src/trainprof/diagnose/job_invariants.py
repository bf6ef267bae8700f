"""The job findings are claims: the invariants that make them checkable (ARCHITECTURE.md).

- every rank's wait ≤ its span (a union of wait intervals inside its matched window);
- the waits attributed to culprits are disjoint parts of the measured waits:
  Σ_k others_wait_k · (n − 1) ≤ Σ_r wait_r, and a rank's `waited_for` ≤ its wait;
- the named culprits' gains sum to ≤ `wait_bound_pct` (each gain is a mean over the n − 1
  other ranks of their attributed waits, so that is the most they can claim together);
- a named rank (job finding, or multirank.py's compute straggler) arrived last at least
  once and the others waited for it (caused wait > 0): a rank that only waited is never named.

By construction these hold (analysis/job/collectives_waits.py); the check is what keeps them
true through later changes. `TRAINPROF_STRICT_INVARIANTS=1` (the tests) makes a violation
raise; otherwise (users' runs) it is logged and repaired: a finding naming a rank that was
never last is dropped, gains over the bound are scaled down to it. A user gets a report
that holds, and a test gets a failure that names the broken claim.
"""

from __future__ import annotations

import logging
import os

from msgspec import UNSET
from msgspec.structs import replace

from trainprof.recordtypes.analysis import JobCollectives, MultiRank
from trainprof.recordtypes.finding import Finding

log = logging.getLogger("trainprof")
EPS_US = 1e-3  # float rounding of sums of µs
EPS_PCT = 1e-6


class InvariantError(AssertionError):
    """A job finding contradicts the measured waits."""


def _named_ok(job: JobCollectives, rank: int) -> bool:
    row = next((r for r in job.per_rank if r.rank == rank), None)
    return row is not None and row.others_waited


def check_job_invariants(job: JobCollectives | None, named: list[tuple[int, float]],
                         compute_stragglers: list[int] = ()) -> list[str]:
    """Violations (empty when all hold). `named`: (rank, gain %) per job finding."""
    if job is None:
        return []
    out = []
    n = job.ranks
    attributed = 0.0
    for r in job.per_rank:
        if r.span_us is not UNSET and r.wait_us > r.span_us + EPS_US:
            out.append(f"rank {r.rank} waited {r.wait_us:,.1f} µs, longer than its span {r.span_us:,.1f} µs")
        if r.waited_for is not UNSET and sum(w.wait_us for w in r.waited_for) > r.wait_us + EPS_US:
            out.append(f"rank {r.rank}: the waits attributed to others exceed its wait")
        if r.others_wait_us is not UNSET:
            attributed += r.others_wait_us * (n - 1)
    if attributed > job.total_wait_us * (1 + EPS_PCT) + EPS_US:
        out.append(f"attributed waits {attributed:,.1f} µs exceed the measured waits {job.total_wait_us:,.1f} µs")
    bound = job.wait_bound_pct if job.wait_bound_pct is not UNSET else 100.0
    total = sum(g for _, g in named)
    if total > bound + 0.01 + EPS_PCT:  # the findings' gains are rounded to 0.01
        out.append(f"job findings claim {total:.2f}% together, more than the measured waits allow ({bound:.2f}%)")
    for rank, _ in named:
        if not _named_ok(job, rank):
            out.append(f"rank {rank} is named but was never the last to arrive where others waited")
    for rank in compute_stragglers:
        if not _named_ok(job, rank):
            out.append(f"rank {rank} is a compute straggler but was never the last to arrive where others waited")
    return out


def strict() -> bool:
    return os.environ.get("TRAINPROF_STRICT_INVARIANTS") == "1"


def enforce(multi: MultiRank, found: list[tuple[int, Finding]]) -> list[tuple[int, Finding]]:
    """The findings, checked (module docstring): raise in strict mode, else repair and log."""
    # without matched collectives there are no waits to check against: the compute guess stands
    # (multirank.reconcile_stragglers leaves it, jobs/analyze.py uses it), as it was found
    job = multi.collectives if multi.collectives and multi.collectives.matched else None
    bad = check_job_invariants(job, [(r, f.estimated_gain_pct) for r, f in found],
                               [s.rank for s in multi.stragglers] if job else [])
    if not bad:
        return found
    if strict():
        raise InvariantError("; ".join(bad))
    log.warning("job findings repaired: %s", "; ".join(bad))
    found = [(r, f) for r, f in found if _named_ok(job, r)]
    bound = job.wait_bound_pct if job.wait_bound_pct is not UNSET else 100.0
    total = sum(f.estimated_gain_pct for _, f in found)
    if total > bound > 0:
        found = [(r, replace(f, estimated_gain_pct=round(f.estimated_gain_pct * bound / total, 2),
                             evidence=f.evidence + " (gain scaled down to the measured waits)")) for r, f in found]
    return found
