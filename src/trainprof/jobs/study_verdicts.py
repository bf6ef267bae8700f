"""The study's conclusions, computed once and stored in study.json: is the optimised run
still accurate (the guard's verdict), how much faster is it (at equal work), and is it close
enough to the achievable that tuning can stop (the stop criterion).

Pure functions of the records (run.json, tune.json, the traces' analyses, diff.json); the
report only prints what they return (issue #32: the report said "bounded by the seed-to-seed
noise" for a validation loss 0.221 worse with a guard tolerance of 0.078, and gave 1.29× and
0.70× for a micro-batch 16 → 32 change that doubled the tokens per step).
"""

from __future__ import annotations

from typing import Any

from trainprof.recordtypes.analysis import Rank
from trainprof.recordtypes.base import known, or_default
from trainprof.recordtypes.diff import Diff
from trainprof.recordtypes.run import RunRecord
from trainprof.recordtypes.tune import Tune
from trainprof.tune.guard import Guard


def _as_trial(run: RunRecord) -> dict:
    return {"losses": [s.loss for s in run.steps], "val_loss": run.summary.val_loss}


def accuracy_verdict(tune: Tune | None, base_run: RunRecord, new_run: RunRecord, knobs: list[str],
                     guard: Guard | None = None) -> dict[str, Any]:
    """The accuracy guard (tune/guard.py) applied to the optimised run against the baseline
    run, with the tolerance the tune calibrated on two seeds: `verdict` accepted | rejected,
    or None with `reason` when there is nothing to judge by (no tune, runs of unequal length).
    `same_math`: every knob of the configuration keeps the data and the maths (then the loss
    trajectory is checked too, else the validation loss only)."""
    b, n = _as_trial(base_run), _as_trial(new_run)
    out: dict[str, Any] = {"val_base": b["val_loss"], "val_new": n["val_loss"],
                           "val_delta": (n["val_loss"] - b["val_loss"]) if b["val_loss"] is not None
                           and n["val_loss"] is not None else None}
    tol = tune.tolerance if tune else None
    if tol is None:
        return {**out, "verdict": None, "reason": "no accuracy guard: the tune stage did not run, so no "
                "seed-to-seed tolerance was measured"}
    if len(b["losses"]) != len(n["losses"]):
        return {**out, "verdict": None, "reason": f"not comparable: the runs trained {len(b['losses'])} and "
                f"{len(n['losses'])} steps (one stopped at the budget's deadline)"}
    by_knob = {t.knob: t for t in tune.trials}
    same_math = all(by_knob[k].same_math is True for k in knobs if k in by_knob and known(by_knob[k].same_math))
    ok, why = (guard or Guard()).check(n, b, tol, same_math)
    ev = Guard.measure(n, b)
    return {**out, "verdict": "accepted" if ok else "rejected", "reason": why, "same_math": same_math,
            "val_tol": tol.val_tol, "trajectory_tol": tol.trajectory_tol, "loss_deviation": ev["loss_deviation"]}


def _tokens(run: RunRecord) -> float:
    return float(run.summary.tokens_per_step)


def speedup(tune: Tune | None, choice: dict, runs: list[RunRecord], ranks: list[Rank], diff: Diff) -> dict[str, Any]:
    """Optimised ÷ baseline at equal work: tokens/s, never a ratio of step times of steps that
    hold different numbers of tokens.

    `final`: the one figure to quote. The tune's verify pairs (median of best/baseline tokens/s
    ratios, alternating, so drift hits both) when the optimised configuration is the one they
    measured; else the two runs' tokens/s (single runs, unpaired: weaker). `runs`: tokens/s of
    each run's median step. `profiled`: the profiled iteration (GPU step span, or the
    profiler step's host time on a CPU trace), per step when both steps hold the same tokens,
    else per token."""
    b, n = runs
    tb, tn = _tokens(b), _tokens(n)
    mb, mn = b.summary.step_time_median_s, n.summary.step_time_median_s
    tps_b, tps_n = (tb / mb if mb else None), (tn / mn if mn else None)
    runs_fig = {"base_tokens_per_s": tps_b, "new_tokens_per_s": tps_n,
                "speedup": tps_n / tps_b if tps_b and tps_n else None,
                "base_tokens_per_step": tb, "new_tokens_per_step": tn,
                "base_step_s": mb, "new_step_s": mn, "source": "tokens/s of each run's median measured step"}
    return {"final": _final(tune, choice, runs_fig), "runs": runs_fig,
            "profiled": _profiled(ranks, diff, tb, tn), "equal_tokens_per_step": tb == tn}


def _final(tune: Tune | None, choice: dict, runs_fig: dict) -> dict[str, Any]:
    what = choice.get("what")
    if what == "baseline":
        return {"speedup": None, "source": "none", "reason": "no knob was kept: the optimised profile is the "
                "baseline again, and any difference between the two is run-to-run noise"}
    v = tune.best.verify if tune else None
    if v is not None and v.pairs and known(v.verdict) and v.verdict == "unstable machine":
        return {"speedup": None, "source": "verify pairs", "pairs": [p.ratio for p in v.pairs],
                "reason": tune.best.unconfirmed.reason if tune.best.unconfirmed else "unstable machine"}
    if v is not None and v.pairs:
        fig = {"speedup": v.speedup_median, "source": "verify pairs", "pairs": [p.ratio for p in v.pairs],
               "min": v.speedup_min, "max": v.speedup_max,
               "base_tokens_per_s": [p.base_tokens_per_s for p in v.pairs],
               "best_tokens_per_s": [p.best_tokens_per_s for p in v.pairs]}
        if what == "unconfirmed":
            fig["reason"] = tune.best.unconfirmed.reason if tune.best.unconfirmed else "not confirmed"
        return fig
    why = (f"no verify pair ran ({v.skipped_reason})" if v is not None and known(v.skipped_reason)
           else "no verify pairs (--verify-trials 0)")
    return {"speedup": runs_fig["speedup"], "source": "runs", "reason": f"{why}: the two profiled runs' tokens/s, "
            "single runs that did not alternate"}


def _profiled(ranks: list[Rank], diff: Diff, tb: float, tn: float) -> dict[str, Any]:
    st = diff.step_time_us
    if st.base and st.new and (or_default(ranks[0].has_gpu, False) or or_default(ranks[1].has_gpu, False)):
        base_us, new_us, source = st.base, st.new, "GPU time per profiled step (trainprof diff)"
    else:
        per = [[p.cpu_us for p in or_default(r.per_step, []) if or_default(p.cpu_us, None)] for r in ranks]
        base_us = sum(per[0]) / len(per[0]) if per[0] else None
        new_us = sum(per[1]) / len(per[1]) if per[1] else None
        source = "host time of the profiled step (CPU trace)"
    out = {"base_us": base_us, "new_us": new_us, "source": source, "per": "step" if tb == tn else "token"}
    if base_us and new_us:
        if tb == tn:
            out["speedup"] = base_us / new_us
        else:  # time per token: the steps hold different work
            out.update(base_us_per_token=base_us / tb, new_us_per_token=new_us / tn,
                       speedup=(base_us / tb) / (new_us / tn))
    else:
        out["speedup"] = None
    return out


def stop_verdict(run: RunRecord) -> dict[str, Any]:
    """Seed 001's stop criterion on the optimised run: "know the achievable TFLOPS, optimise until
    close, then stop" (hardware/references.toml [stop]). `met`: True at ≥ the threshold; False
    below it against a measured ceiling or peak; None below it when the % is MFU against a
    datasheet peak (a lower bound of the % of achievable: only "stop" can follow from it) or
    unknown. `pct_of_achievable` as diagnose/flowchart.pct_of_achievable gives it."""
    from trainprof.diagnose.flowchart import pct_of_achievable
    from trainprof.hardware.references import stop_pct

    pct, basis = pct_of_achievable(run)
    threshold = stop_pct()
    if pct is None:
        met = None
    elif pct >= threshold:
        met = True
    else:
        met = None if "datasheet" in basis else False
    return {"pct_of_achievable": None if pct is None else round(pct, 2), "threshold_pct": threshold, "met": met,
            "basis": basis}
