"""Projected gain of each diagnosis finding, from the what-if on the dependency graph.

A rule's `estimated_gain_pct` is an upper bound: the share of the timeline its cause
occupies. The what-if (whatif.py) re-times the graph without the cause, so waits that
overlapped other work or that the critical path would simply move to are not counted:
`projected_gain_pct` ≤ the bound in most traces, and the gap between the two says how much
of the cause hides behind something else. Only findings whose fix maps onto one graph edit
get a projection; the others keep None (a projection we cannot make is not a zero).
"""

from __future__ import annotations

# finding id -> the standard what-if scenario that removes its cause
FINDING_EDIT = {
    "data_loading": "remove data_loading",
    "host_sync": "remove host_sync",
    "exposed_communication": "remove exposed_comm",
    "launch_bound": "remove launch_overhead",
}


def projected_gain_pct(finding_id: str, whatif: dict | None) -> float | None:
    """The what-if gain (% of step time) for a finding, from a rank's `whatif` block, or
    None when there is none or the finding has no matching edit."""
    label = FINDING_EDIT.get(finding_id)
    scenarios = (whatif or {}).get("scenarios") or []
    for s in scenarios:
        if s.get("label") == label:
            return round(max(0.0, float(s["gain_pct"])), 2)
    return None
