"""What a before/after section says, shared by the terminal, diff.md, report.md and
report.html (no rich import: report.html renders without it). The Markdown table of the
biggest changes is report/templates/md/changes.md.j2."""

from __future__ import annotations

from trainprof.analysis.job.diff import gain_words
from trainprof.recordtypes.diff import Diff, Row, Side, Verdict
from trainprof.report.formatting import duration

CALL = {"faster": "faster", "slower": "slower", "noise": "no measurable change (noise)", "untested": "not tested"}


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


def side_text(side: Side) -> str:
    """What one side holds: "run folder, run.json and 1 trace; CPU, 2 profiled steps"."""
    parts = []
    if side.folder is not None:
        n = side.traces or 0
        parts.append("run folder: run.json" + (f" and {n} trace{'s' if n != 1 else ''}" if n else ", no trace"))
    if side.file is not None:
        steps = f"{side.steps} profiled step{'s' if side.steps != 1 else ''}" if side.steps is not None else ""
        if side.has_gpu and side.gpu_steps is not None:
            steps += f", {side.gpu_steps} with GPU work"
        parts.append(", ".join(x for x in (side.device_name or "CPU", steps) if x))
    return "; ".join(parts)


def side_name(side: Side) -> str:
    """The side's path: its run folder, else its trace."""
    return side.folder or side.file or "—"


def _x(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}×"


def verdict_line(v: Verdict) -> str:
    """The headline: "faster per sample: 3.40× at the median step (95% CI 1.35×–3.55×), 2.96× at
    the fast steps (95% CI 2.71×–3.12×)"."""
    head = CALL.get(v.call, v.call) + (f" per {v.per}" if v.per != "step" and v.call in ("faster", "slower") else "")
    if v.ci_low is None:  # untested: the step times under it say the ratio
        return head + " against the noise" if v.call == "untested" else head
    c = f"{100 * (v.confidence or 0.95):.0f}% CI"
    text = f"{head}: {_x(v.ratio)} at the median step ({c} {_x(v.ci_low)}–{_x(v.ci_high)})"
    if v.fast_ratio is not None:
        text += f", {_x(v.fast_ratio)} at the fast steps ({c} {_x(v.fast_ci_low)}–{_x(v.fast_ci_high)})"
    if v.call == "noise" and v.band is not None:
        text += f"; a change needs {1 + v.band:g}× here"
    return text


def run_lines(d: Diff) -> list[str]:
    """The runs' figures under the headline: the median steps, and the throughput when the
    verdict compares per token or sample."""
    r = d.runs
    if r is None:
        return []
    out = [f"median step {duration(1e6 * r.base.step_median_s, 'us')} → {duration(1e6 * r.new.step_median_s, 'us')} "
           f"({r.base.steps} and {r.new.steps} measured steps, run.json)"]
    if d.verdict is not None and d.verdict.per != "step" and r.base.units_per_s and r.new.units_per_s:
        out.append(f"{r.base.unit}/s {r.base.units_per_s:,.0f} → {r.new.units_per_s:,.0f} "
                   f"({r.base.units_per_step:g} → {r.new.units_per_step:g} {r.base.unit} per step)")
    return out


def trace_step_line(d: Diff) -> str | None:
    """The traces' step time (profiled steps), or None without both traces."""
    st = d.step_time_us
    if not st.speedup:
        return None
    if d.verdict is not None and d.verdict.per != "step":  # unequal work: a ratio of step times would mislead
        return (f"profiled step time {duration(st.base, 'us')} → {duration(st.new, 'us')}"
                + (f" ({st.source})" if st.source else ""))
    return (f"profiled step time {duration(st.base, 'us')} → {duration(st.new, 'us')}: "
            f"{st.speedup:.2f}× ({st.change_pct:+.1f}%)" + (f" ({st.source})" if st.source else ""))


def gain(pct: float | None, projected: float | None) -> str:
    """A finding's figures in a table cell, as its analysis says them (— where absent)."""
    return "—" if pct is None and projected is None else gain_words(pct, projected)
