"""The accuracy guard: a faster run must still learn the same.

Tolerances come from the noise between two baseline runs that differ only in the seed:
* trajectory (knobs that keep the data and the maths): mean |loss_trial − loss_base| over the
  measured steps must not exceed `trajectory_factor` × the mean |Δ| between the two seeds —
  a run on the *same* seed that drifts further than a different seed does learned differently;
* validation loss: val_trial ≤ val_base + max(val_floor, val_factor × |val_seed1 − val_seed2|);
* every loss finite.

Like with like: two runs that see a different number of tokens per optimizer step (a bigger
micro-batch, more accumulation) are compared at the same tokens seen. The data stream is the
same sequence of samples whatever the batch (workload/data.RandomWindows: sample i is a
function of the seed and i), so step i of a run with K× the tokens per step saw exactly the
micro-batches of the other run's steps K·i … K·i+K−1: the other run's losses are averaged over
those K steps before the difference is taken (`per_tokens`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainprof.recordtypes.tune import Tolerance


@dataclass(frozen=True)
class Guard:
    trajectory_factor: float = 1.0
    """× the seed-to-seed trajectory noise allowed for same-math knobs"""
    trajectory_floor: float = 0.02
    """minimum trajectory tolerance (mean |Δloss|), for machines where seed noise is tiny"""
    val_factor: float = 2.0
    """× the seed-to-seed validation-loss noise allowed"""
    val_floor: float = 0.02
    """minimum validation-loss tolerance"""

    def calibrate(self, base: dict, other_seed: dict) -> Tolerance:
        traj = _mean_abs(base["losses"], other_seed["losses"])
        val = abs((base["val_loss"] or 0.0) - (other_seed["val_loss"] or 0.0))
        return Tolerance(trajectory_tol=max(self.trajectory_floor, self.trajectory_factor * traj),
                         val_tol=max(self.val_floor, self.val_factor * val),
                         seed_trajectory_noise=traj, seed_val_noise=val)

    @staticmethod
    def measure(trial: dict, base: dict, ref: dict | None = None) -> dict:
        """The evidence the verdict rests on, kept in tune.json beside it: mean |Δloss| against
        the reference trajectory (`ref`, default the baseline's), at the same tokens seen, and the
        validation-loss difference (trial − baseline; > 0 is worse)."""
        val = (trial["val_loss"] - base["val_loss"]
               if trial.get("val_loss") is not None and base.get("val_loss") is not None else None)
        return {"loss_deviation": _mean_abs(*per_tokens(trial, ref or base)), "val_delta": val}

    def check(self, trial: dict, base: dict, tol: Tolerance, same_math: bool,
              ref: dict | None = None) -> tuple[bool, str | None]:
        """`ref`: the trajectory a same-math knob must repeat (default the baseline's; after a
        kept knob that changed what is learned, that knob's trial: tune/ladder.py)."""
        losses = trial["losses"] + ([trial["val_loss"]] if trial["val_loss"] is not None else [])
        if any(x is None or not math.isfinite(x) for x in losses):
            return False, "non-finite loss"
        if same_math:
            d = _mean_abs(*per_tokens(trial, ref or base))
            if d > tol.trajectory_tol:
                return False, (f"loss trajectory moved {d:.3f} from the baseline's (tolerance "
                               f"{tol.trajectory_tol:.3f}, the seed-to-seed noise)")
        if base["val_loss"] is not None and trial["val_loss"] is not None:
            if trial["val_loss"] > base["val_loss"] + tol.val_tol:
                return False, (f"validation loss {trial['val_loss']:.3f} worse than the baseline's "
                               f"{base['val_loss']:.3f} by more than {tol.val_tol:.3f}")
        return True, None


def _grouped(losses: list, k: int) -> list:
    """Means over consecutive groups of k steps (complete groups only)."""
    return [sum((x or 0.0) for x in losses[i:i + k]) / k for i in range(0, len(losses) - k + 1, k)]


def per_tokens(a: dict, b: dict) -> tuple[list, list]:
    """The two runs' losses at the same tokens seen (module docstring): the run with fewer
    tokens per step averaged over groups of the ratio. Unknown or equal tokens per step (a
    program's trials, the baseline's seeds), or a ratio that is not a whole number: as they are."""
    ta, tb = a.get("tokens_per_step") or 0, b.get("tokens_per_step") or 0
    la, lb = a["losses"], b["losses"]
    if not ta or not tb or ta == tb:
        return la, lb
    if ta % tb == 0:
        return la, _grouped(lb, ta // tb)
    if tb % ta == 0:
        return _grouped(la, tb // ta), lb
    return la, lb


def _mean_abs(a: list, b: list) -> float:
    n = min(len(a), len(b))
    if n == 0:
        return 0.0
    return sum(abs((a[i] or 0.0) - (b[i] or 0.0)) for i in range(n)) / n


@dataclass(frozen=True)
class ProgramGuard:
    """The guard for `trainprof tune -- COMMAND`: the program's own loss, per measured step (the
    scalar it calls backward() on; run.json steps[].loss), against the baseline's on the same
    steps. The program chooses its seed, so the noise is measured by running the baseline twice,
    unchanged: a seeded, deterministic program repeats to the last bit (noise 0), and the
    tolerance is then the floor.

    * every loss finite;
    * a knob that keeps the data and the maths (all of the agent's: workers, fused/foreach,
      threads, GC, bf16, compile, ...): mean |Δloss| ≤ tol = max(`floor_rel` × the baseline's mean
      |loss|, `noise_factor` × the mean |Δloss| between the two baseline runs). 2% of the loss's
      own scale is far above the rounding of a reordered sum (fused/foreach, threads: ~1e-7
      relative) and of bf16 matmuls over a few steps (measured: ≤ 0.2% on the planted programs),
      and far below a broken model or a wrong learning rate;
    * a knob that may change what is learned (the user's --arg-knob/--env-knob: another batch size,
      another learning rate): step-by-step trajectories mean nothing, so only a run that learns
      worse is refused: its mean loss above the baseline's by more than max(tol, `changed_rel` ×
      the baseline's mean |loss|). A program's own validation is the full check.
    """

    floor_rel: float = 0.02
    """minimum trajectory tolerance, as a fraction of the baseline's mean |loss|"""
    noise_factor: float = 1.0
    """× the run-to-run trajectory noise allowed"""
    changed_rel: float = 0.10
    """a knob that changes what is learned may raise the mean loss by this fraction of the baseline's"""

    def calibrate(self, base: dict, other: dict) -> Tolerance:
        scale = _mean_abs(base["losses"], [0.0] * len(base["losses"]))
        noise = _mean_abs(base["losses"], other["losses"])
        tol = max(self.floor_rel * scale, self.noise_factor * noise)
        changed = max(tol, self.changed_rel * scale)
        why = ("the two baseline runs repeated exactly (a seeded, deterministic program): the tolerance is the floor, "
               f"{100 * self.floor_rel:g}% of the baseline's mean loss" if noise == 0 else
               f"max({100 * self.floor_rel:g}% of the baseline's mean loss, the run-to-run noise {noise:.3g})")
        return Tolerance(trajectory_tol=tol, val_tol=0.0, seed_trajectory_noise=noise, seed_val_noise=None,
                         changed_tol=changed, loss_scale=scale, rule=why)

    measure = staticmethod(Guard.measure)

    def check(self, trial: dict, base: dict, tol: Tolerance, same_math: bool,
              ref: dict | None = None) -> tuple[bool, str | None]:
        if not trial["losses"] or any(x is None or not math.isfinite(x) for x in trial["losses"]):
            return False, "non-finite loss" if trial["losses"] else "no loss recorded (no backward() on a scalar)"
        if same_math:
            d = _mean_abs(*per_tokens(trial, ref or base))
            if d > tol.trajectory_tol:
                return False, (f"loss trajectory moved {d:.4g} from the baseline's (tolerance "
                               f"{tol.trajectory_tol:.4g}: {tol.rule})")
            return True, None
        n = min(len(trial["losses"]), len(base["losses"]))
        mt, mb = (sum(trial["losses"][:n]) / n, sum((x or 0.0) for x in base["losses"][:n]) / n) if n else (0.0, 0.0)
        if mt > mb + tol.changed_tol:
            return False, (f"learns worse: mean loss {mt:.4g} over the measured steps against the baseline's {mb:.4g} "
                           f"(allowed +{tol.changed_tol:.4g}: {100 * self.changed_rel:g}% of its mean loss)")
        return True, None
