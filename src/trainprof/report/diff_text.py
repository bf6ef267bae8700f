"""What a before/after section says, shared by the terminal, diff.md, report.md and
report.html (no rich import: report.html renders without it)."""

from __future__ import annotations

from trainprof.recordtypes.diff import Changes, Diff, Row
from trainprof.report.md_cells import md_code, md_signed_us, md_us


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


def changes_markdown(block: Changes, title: str, n: int | None = None) -> list[str]:
    """A Markdown table of the biggest changes (µs per step, largest |Δ| first); a base too
    small for a percentage reads "base < 1% of step" (analysis/job/diff.py SMALL_BASE_PCT)."""
    rows = block.top[:n] if n else block.top
    if not rows:
        return []
    out = [title, "", "| name | base | new | Δ | change |", "|---|---:|---:|---:|---:|"]
    out += [f"| {md_code(r.name)} | {md_us(r.base_us_per_step)} | {md_us(r.new_us_per_step)} | "
            f"{md_signed_us(r.delta_us_per_step)} | {change(r)} |" for r in rows]
    if any(r.small_base for r in rows):
        out += ["", "A base under 1% of the step (or 10 µs) gets no percentage: one more call would double it."]
    return out + [""]
