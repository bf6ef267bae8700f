"""The study's conclusions in words, one function each, so the terminal, report.md and
report.html say the same sentence about the same fields of study.json (`accuracy`,
`speedup`: jobs/study_verdicts.py). Each figure goes through report/figures.show with its
path in study.json, so the consistency checks see where it came from."""

from __future__ import annotations

from typing import Any, Union

from trainprof.recordtypes.base import as_struct, known, or_default
from trainprof.recordtypes.study import Accuracy, FinalSpeedup, Speedup
from trainprof.report.figures import show

ACC = "study.accuracy."
FINAL = "study.speedup.final."


def accuracy_sentence(acc: Union[Accuracy, dict[str, Any]]) -> str:
    """The guard's verdict with its tolerance beside it:
    `validation loss 3.004 → 3.225 (Δ +0.221): outside the guard's tolerance 0.078 → rejected`.
    `acc`: study.json's block (or study_verdicts.accuracy_verdict's dict, typed here)."""
    acc = as_struct(acc, Accuracy)
    if or_default(acc.val_base, None) is None and known(acc.loss_deviation) and acc.loss_deviation is not None:
        return _program_accuracy(acc)
    d = or_default(acc.val_delta, None)
    head = (f"validation loss {show(acc.val_base, 'num3', ACC + 'val_base')} → "
            f"{show(acc.val_new, 'num3', ACC + 'val_new')}"
            + (f" (Δ {show(d, 'signed3', ACC + 'val_delta')})" if d is not None else ""))
    verdict, reason = or_default(acc.verdict, None), acc.reason or ""
    if verdict is None:
        return f"{head}: no guard verdict ({reason})"
    tol = show(acc.val_tol, "num3", ACC + "val_tol")
    if verdict == "accepted":
        traj = (f"; loss trajectory {show(acc.loss_deviation, 'num3', ACC + 'loss_deviation')} from the "
                f"baseline's, within {show(acc.trajectory_tol, 'num3', ACC + 'trajectory_tol')}"
                if acc.same_math and known(acc.loss_deviation) else "")
        return f"{head}: within the guard's tolerance {tol}{traj} → accepted"
    if reason.startswith("validation loss"):
        return f"{head}: outside the guard's tolerance {tol} → rejected"
    return f"{head}; {reason} → rejected"


def _program_accuracy(acc: Accuracy) -> str:
    """A program's study (jobs/study_program.py): no validation loss of ours, the program's own
    training loss compared step by step on the same steps."""
    head = (f"the program's training loss over the measured steps moved "
            f"{show(acc.loss_deviation, 'num3', ACC + 'loss_deviation')} (mean |Δloss|) from the baseline's; "
            "no validation loss (a program's held-out evaluation is its own)")
    verdict, reason = or_default(acc.verdict, None), acc.reason or ""
    if verdict is None:
        return f"{head}: no guard verdict ({reason})"
    if verdict == "accepted":
        tol = show(acc.trajectory_tol, "num3", ACC + "trajectory_tol")
        return f"{head}: within the guard's tolerance {tol} → accepted" if acc.same_math else \
            f"{head}: the knobs may change what is learned, and the mean loss did not rise beyond the guard's allowance → accepted"
    return f"{head}; {reason} → rejected"


def speedup_sentence(sp: Union[Speedup, dict[str, Any]], acc: Union[Accuracy, dict[str, Any], None] = None,
                     unit: str = "tokens") -> str:
    """The one final speed-up figure with what it rests on (the verify pairs, or single runs),
    and, where the guard rejected the optimised run (`acc`, study.json's accuracy block), that
    it was bought with accuracy: a bold 2× beside a rejection read as a recommendation. `unit`:
    what a step's batch counts (run.json's batch_unit: a program's may be samples)."""
    text = _speedup(as_struct(sp, Speedup), unit)
    acc = as_struct(acc, Accuracy) if acc is not None else None
    if acc is not None and or_default(acc.verdict, None) == "rejected" and not text.startswith("no speed-up"):
        text += ("; but the accuracy guard rejected the optimised run (its validation loss is outside the "
                 "tolerance), so this is a speed-up bought with accuracy, not a configuration to adopt as it is")
    return text


def _speedup(sp: Speedup, unit: str = "tokens") -> str:
    f = sp.final or FinalSpeedup()
    x = or_default(f.speedup, None)
    pairs = ", ".join(show(r, "x2", f"{FINAL}pairs[{i}]") for i, r in enumerate(f.pairs or []))
    if x is None:  # ratios measured beside "no speed-up claimed" read as claims (issue #37): say they are not
        return f"no speed-up claimed: {f.reason or 'nothing measured'}" + (
            f" (not claimed: the verify pairs measured {pairs})" if pairs else "")
    x = show(x, "x2", FINAL + "speedup")
    if f.source == "verify pairs":
        text = (f"{x} the baseline's {unit}/s at equal work (median of {len(f.pairs or [])} "
                f"alternating verify pairs: {pairs})")
        return text + (f"; not confirmed: {f.reason}" if f.reason else "")
    return f"{x} the baseline's {unit}/s at equal work ({or_default(f.reason, None)})"


def speedup_claimed(study: Any) -> bool:
    """Whether the folder's ratios may be printed as speed-ups: always outside a study; in a
    study only when it claims one (study.speedup.final.speedup). Where it claims none, the
    runs', the profiled step's and the diff's ratios are shown as "not claimed: 1.71×", never
    bold beside "no speed-up claimed" (issue #37)."""
    if study is None:
        return True
    sp = study.get("speedup") if isinstance(study, dict) else or_default(study.speedup, None)
    if not sp:
        return False
    final = as_struct(sp, Speedup).final or FinalSpeedup()
    return or_default(final.speedup, None) is not None


def not_claimed(text: str, claimed: bool) -> str:
    """A ratio as a speed-up where one is claimed, else marked as no claim."""
    return text if claimed or text == "—" else f"not claimed: {text}"
