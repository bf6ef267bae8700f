"""What a before/after section says, shared by the terminal, diff.md, report.md and
report.html (no rich import: report.html renders without it). The Markdown table of the
biggest changes is report/templates/md/changes.md.j2."""

from __future__ import annotations

from trainprof.recordtypes.diff import Diff, Row


def has_gpu(d: Diff) -> bool:
    """Whether either trace holds GPU activity (a diff.json from before `has_gpu` was
    recorded: GPU tables whenever a GPU figure is non-zero)."""
    sides = [s.has_gpu for s in (d.base, d.new) if s is not None and s.has_gpu is not None]
    if sides:
        return any(sides)
    return bool(d.kernels.top) or any(v.base_us_per_step or v.new_us_per_step for v in d.temporal_breakdown.values())


def ops_title(d: Diff) -> str:
    """What the operators' times are: their kernels' GPU time, or self CPU time on a CPU trace."""
    if d.ops.metric == "self_cpu":
        return "Operators by self CPU time per step (a CPU trace)"
    return "Operators by their kernels' GPU time per step" if has_gpu(d) else "Operators per step"


def change(r: Row) -> str:
    """`+12.5%`, or why there is no percentage (a base too small for one to mean anything)."""
    if r.change_pct is not None:
        return f"{r.change_pct:+.1f}%".replace("-", "−")
    return {"added": "new", "removed": "gone"}.get(r.status, "base < 1% of step" if r.small_base else "—")
