"""The study's conclusions in words, one function each, so the terminal, report.md and
report.html say the same sentence about the same fields of study.json (`accuracy`,
`speedup`: jobs/study_verdicts.py)."""

from __future__ import annotations

from typing import Any

from trainprof.report.units import num


def accuracy_sentence(acc: dict[str, Any]) -> str:
    """The guard's verdict with its tolerance beside it:
    `validation loss 3.004 → 3.225 (Δ +0.221): outside the guard's tolerance 0.078 → rejected`."""
    d = acc.get("val_delta")
    head = f"validation loss {num(acc.get('val_base'))} → {num(acc.get('val_new'))}" + (
        f" (Δ {d:+.3f})" if d is not None else "")
    verdict, reason = acc.get("verdict"), acc.get("reason") or ""
    if verdict is None:
        return f"{head}: no guard verdict ({reason})"
    tol = acc.get("val_tol")
    if verdict == "accepted":
        traj = (f"; loss trajectory {acc['loss_deviation']:.3f} from the baseline's, within "
                f"{acc['trajectory_tol']:.3f}" if acc.get("same_math") and acc.get("loss_deviation") is not None
                else "")
        return f"{head}: within the guard's tolerance {tol:.3f}{traj} → accepted"
    if reason.startswith("validation loss"):
        return f"{head}: outside the guard's tolerance {tol:.3f} → rejected"
    return f"{head}; {reason} → rejected"


def speedup_sentence(sp: dict[str, Any]) -> str:
    """The one final speed-up figure with what it rests on (the verify pairs, or single runs)."""
    f = sp.get("final") or {}
    x = f.get("speedup")
    if x is None:
        pairs = f" (the pairs measured {', '.join(f'{r:.2f}×' for r in f['pairs'])})" if f.get("pairs") else ""
        return f"no speed-up claimed: {f.get('reason') or 'nothing measured'}{pairs}"
    if f.get("source") == "verify pairs":
        pairs = ", ".join(f"{r:.2f}×" for r in f.get("pairs") or [])
        text = (f"{x:.2f}× the baseline's tokens/s at equal work (median of {len(f.get('pairs') or [])} "
                f"alternating verify pairs: {pairs})")
        return text + (f"; not confirmed: {f['reason']}" if f.get("reason") else "")
    return f"{x:.2f}× the baseline's tokens/s at equal work ({f.get('reason')})"
