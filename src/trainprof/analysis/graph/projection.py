"""A finding's bound and projected gain, from the what-if on the dependency graph.

Each of these findings removes one cause the graph can edit (whatif.py): its gain bound is
the scenario's `bound_pct` — the time the edit removes per steady step, never more than the
step minus the busiest stream's work (whatif_bounds.py) — and its projection is the
scenario's `gain_pct`, which the re-timing keeps ≤ that bound (checked in code). So a
finding's projected gain never exceeds its own bound, in the same unit (% of the step time
the what-if measures). The rule's own figure (GPU idle it caused, exposed communication on
the GPU timeline) stays in the evidence: it says what was seen, the bound what a fix could
at most give back.

Where the projection is far below the bound, `why_below` says why from the critical path:
the removed time is mostly off the path (host-bound steps hide exposed collectives; a sync
that waited for a GPU which was itself waiting for something the trace does not show).
"""

from __future__ import annotations

from trainprof.ranking import BOUND_DISCOUNT, rank_key, ranking_gain  # noqa: F401 - the one ranking key
from trainprof.recordtypes.base import known
from trainprof.recordtypes.graph import CriticalPath, Scenario, WhatIf

# finding id -> the standard what-if scenario that removes its cause
FINDING_EDIT = {
    "data_loading": "remove data_loading",
    "host_sync": "remove host_sync",
    "exposed_communication": "remove exposed_comm",
    "launch_bound": "remove launch_overhead",
    "allocator_churn": "remove allocator",
    "tiny_kernels": "remove tiny_kernels",  # whatif.row_scenarios, where the trace has any
    "redundant_copies": "remove redundant_copies",
}
# finding id -> the critical-path kind its cause shows up as
PATH_KIND = {"data_loading": "data_loading", "host_sync": "sync_wait", "exposed_communication": "communication",
             "launch_bound": "launch_overhead", "allocator_churn": "allocator", "tiny_kernels": "kernel",
             "redundant_copies": "kernel"}
EXPLAIN_RATIO = 0.5  # explain a projection below half its bound (and ≥ 1 point below it)


def scenario(finding_id: str, whatif: WhatIf | None) -> Scenario | None:
    label = FINDING_EDIT.get(finding_id)
    for s in whatif.scenarios if whatif else []:
        if s.label == label:
            return s
    return None


def projected_gain_pct(finding_id: str, whatif: WhatIf | None) -> float | None:
    """The what-if gain (% of step time) for a finding: its scenario's `gain_pct`, the figure
    the what-if table shows, as it is (not re-rounded, not clamped: a removal never projects
    a slower step, whatif_bounds.claims; before issue #39 a clamp showed a −1.6% projection as
    0.0% beside a what-if table that said −1.6%), or None when there is none or the finding
    has no matching edit."""
    s = scenario(finding_id, whatif)
    return float(s.gain_pct) if s else None


def bound_pct(finding_id: str, whatif: WhatIf | None) -> float | None:
    """The most the finding's fix can give back (% of step time), or None without a scenario
    (or from a record written before scenarios carried a bound)."""
    s = scenario(finding_id, whatif)
    return float(s.bound_pct) if s and known(s.bound_pct) else None


def with_projection(finding: dict, whatif: WhatIf | None, critical_path: CriticalPath | None) -> dict:
    """The finding with its `projected_gain_pct` (None without a scenario) and, where the
    projection is far below the bound, the reason appended to its evidence."""
    out = {**finding, "projected_gain_pct": projected_gain_pct(finding["id"], whatif)}
    b = bound_pct(finding["id"], whatif)
    if b is not None:  # the rule took its bound from the scenario (rules._bound): the same field, unrounded
        out["estimated_gain_pct"] = b
    why = why_below(finding["id"], whatif, critical_path)
    if why:
        out["evidence"] = f"{out['evidence']}; {why}"
    return out


def why_below(finding_id: str, whatif: WhatIf | None, critical_path: CriticalPath | None) -> str | None:
    """One sentence on why the projection is well below the bound, from the path's shares."""
    s = scenario(finding_id, whatif)
    steps = [x for x in critical_path.steps if x.length_us] if critical_path else []
    if not s or not steps or not known(s.bound_pct):
        return None
    p, b = float(s.gain_pct), float(s.bound_pct)
    if p >= EXPLAIN_RATIO * b or b - p < 1.0:
        return None
    steady = steps[1:] if len(steps) > 1 else steps
    total = sum(x.length_us for x in steady)
    share: dict[str, float] = {}
    for x in steady:
        for k, v in x.share_us.items():
            share[k.split(":")[0]] = share.get(k.split(":")[0], 0.0) + v
    mine = 100.0 * share.get(PATH_KIND[finding_id], 0.0) / total
    top = max(share, key=share.get)
    what = {"cpu_op": "host work (the step is host-bound)", "kernel": "GPU kernels",
            "idle": "waits the trace does not explain (GPU queue gaps, another thread)"}.get(top, top)
    return (f"projected {p:.1f}% of the {b:.1f}% bound: only {mine:.1f}% of the critical path is this cause; "
            f"the path runs through {what} ({100.0 * share[top] / total:.0f}%)")
