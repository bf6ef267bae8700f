"""A finding's bound and projected gain, from the what-if on the dependency graph.

Each of these findings removes one cause the graph can edit (whatif.py): its gain bound is
the scenario's `bound_pct` — the time the edit removes per steady step, never more than the
step minus the busiest stream's work (whatif_bounds.py) — and its projection is the
scenario's `gain_pct`, which the re-timing keeps ≤ that bound (checked in code). So a
finding's projected gain never exceeds its own bound, in the same unit (% of the step time
the what-if measures). The rule's own figure (GPU idle it caused, exposed communication on
the GPU timeline) stays in the evidence: it says what was seen, the bound what a fix could
at most give back.

Which scenario removes which finding's cause is declared by the rule itself, beside its
function (diagnose/registry.py `@rule(id, scenario=..., path_kind=...)`): this module is given
the label and never names a finding.

Where the projection is far below the bound, `why_below` says why from the critical path:
the removed time is mostly off the path (host-bound steps hide exposed collectives; a sync
that waited for a GPU which was itself waiting for something the trace does not show).
"""

from __future__ import annotations

from msgspec.structs import replace

from trainprof.ranking import BOUND_DISCOUNT, rank_key, ranking_gain  # noqa: F401 - the one ranking key
from trainprof.recordtypes.base import known
from trainprof.recordtypes.finding import Finding
from trainprof.recordtypes.graph import CriticalPath, Scenario, WhatIf

EXPLAIN_RATIO = 0.5  # explain a projection below half its bound (and ≥ 1 point below it)


def scenario(label: str | None, whatif: WhatIf | None) -> Scenario | None:
    """The what-if's scenario named `label` (a rule's declared scenario, diagnose/registry.py)."""
    if label is None:
        return None
    for s in whatif.scenarios if whatif else []:
        if s.label == label:
            return s
    return None


def projected_gain_pct(label: str | None, whatif: WhatIf | None) -> float | None:
    """The what-if gain (% of step time) for a finding whose rule declares scenario `label`:
    its `gain_pct`, the figure the what-if table shows, as it is (not re-rounded, not clamped:
    a removal never projects a slower step, whatif_bounds.claims; before issue #39 a clamp
    showed a −1.6% projection as 0.0% beside a what-if table that said −1.6%), or None when
    the what-if has no such scenario or the rule declares none."""
    s = scenario(label, whatif)
    return float(s.gain_pct) if s else None


def bound_pct(label: str | None, whatif: WhatIf | None) -> float | None:
    """The most the fix removing scenario `label`'s cause can give back (% of step time), or
    None without that scenario (or from a record written before scenarios carried a bound)."""
    s = scenario(label, whatif)
    return float(s.bound_pct) if s and known(s.bound_pct) else None


def with_projection(finding: Finding, label: str | None, path_kind: str | None, whatif: WhatIf | None,
                    critical_path: CriticalPath | None) -> Finding:
    """The finding with its `projected_gain_pct` from scenario `label`, its rule's (None without
    one) and, where the projection is far below the bound, the reason appended to its evidence."""
    edits: dict = {"projected_gain_pct": projected_gain_pct(label, whatif)}
    b = bound_pct(label, whatif)
    if b is not None:  # the rule took its bound from the scenario (rules._bound): the same field, unrounded
        edits["estimated_gain_pct"] = b
    why = why_below(label, path_kind, whatif, critical_path)
    if why:
        edits["evidence"] = f"{finding.evidence}; {why}"
    return replace(finding, **edits)


def why_below(label: str | None, path_kind: str | None, whatif: WhatIf | None,
              critical_path: CriticalPath | None) -> str | None:
    """One sentence on why the projection of scenario `label` is well below its bound, from the
    path's shares: how much of it is `path_kind`, the cause's kind on the critical path."""
    s = scenario(label, whatif)
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
    mine = 100.0 * share.get(path_kind, 0.0) / total
    top = max(share, key=share.get)
    what = {"cpu_op": "host work (the step is host-bound)", "kernel": "GPU kernels",
            "idle": "waits the trace does not explain (GPU queue gaps, another thread)"}.get(top, top)
    return (f"projected {p:.1f}% of the {b:.1f}% bound: only {mine:.1f}% of the critical path is this cause; "
            f"the path runs through {what} ({100.0 * share[top] / total:.0f}%)")
