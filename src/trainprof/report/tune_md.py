"""report.md's tuning ladder (tune.json): each trial with whether it passed and whether it is
kept, kept meaning in the final configuration (`best.knobs`), each figure through
report/figures.show with its field."""

from __future__ import annotations

from typing import Any, Callable

from trainprof.recordtypes.base import known
from trainprof.recordtypes.tune import Trial, Tune
from trainprof.report.figures import show
from trainprof.report.md_cells import md_table, md_text

Add = Callable[..., None]


def ladder(add: Add, t: Tune) -> None:
    """How the ladder works, then its table: the baseline and one row per trial."""
    add("`trainprof tune` tried each knob on the ladder one at a time; a knob passed its trial when it "
        "was measurably faster than the best so far and passed the accuracy guard (loss trajectory and "
        "validation loss within seed-to-seed noise); the knobs that passed were then verified together "
        "against the baseline in alternating pairs. **Kept** means in the final configuration: passed "
        "its trial and, where verify pairs ran, confirmed by them.", "")
    kept = set(t.best.knobs)
    rows = [["baseline", "", show(t.baseline.step_time_s, "s", "tune.baseline.step_time_s"), "", "1.00",
             show(t.baseline.mfu, "frac0", "tune.baseline.mfu"), "—", "", "", ""]]
    for i, r in enumerate(t.trials):
        if r.skipped:
            rows.append([md_text(r.knob), md_text(r.description), "—", "—", "—", "—", "—", "skipped", "no", md_text(r.reason)])
            continue
        f = f"tune.trials[{i}]"
        rows.append([md_text(r.knob), md_text(r.description), show(r.step_time_s, "s", f + ".step_time_s"),
                     show(r.step_gain or None, "num2", f + ".step_gain"),
                     show(r.speedup or None, "num2", f + ".speedup"), show(r.mfu, "frac0", f + ".mfu"),
                     _accuracy(r), "passed" if r.accepted else "no",
                     "**kept**" if r.knob in kept else "no", md_text(_why_not(r, t))])
    add(*md_table(["knob", "what it does", "step", "× best so far", "× baseline", "MFU", "accuracy",
                 "trial", "kept", "why not"], rows, right={2, 3, 4, 5}))


def _why_not(r: Trial, t: Any) -> str:
    """Why a knob is not in the final configuration: its trial's reason, or the verify pairs'."""
    if r.reason:
        return r.reason
    u = t.best.unconfirmed
    if r.accepted and r.knob not in t.best.knobs and u:
        return f"not confirmed by the verify pairs: {u.reason}"
    return ""


def _accuracy(r: Trial) -> str:
    """The guard's verdict with its evidence: mean |Δloss| vs the baseline and Δ validation loss."""
    if not r.ok:
        return "—"
    verdict = "ok" if r.accuracy_ok else "failed"
    if not known(r.loss_deviation):
        return verdict  # tune.json from before the evidence was recorded
    val = f", Δval {r.val_delta:+.3f}" if known(r.val_delta) else ""
    return f"{verdict} (\\|Δloss\\| {r.loss_deviation:.3f}{val})"
