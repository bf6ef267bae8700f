"""The accuracy guard: a faster run must still learn the same.

Tolerances come from the noise between two baseline runs that differ only in the seed:
* trajectory (knobs that keep the data and the maths): mean |loss_trial − loss_base| over the
  measured steps must not exceed `trajectory_factor` × the mean |Δ| between the two seeds —
  a run on the *same* seed that drifts further than a different seed does learned differently;
* validation loss: val_trial ≤ val_base + max(val_floor, val_factor × |val_seed1 − val_seed2|);
* every loss finite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


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

    def calibrate(self, base: dict, other_seed: dict) -> dict:
        traj = _mean_abs(base["losses"], other_seed["losses"])
        val = abs((base["val_loss"] or 0.0) - (other_seed["val_loss"] or 0.0))
        return {"trajectory_tol": max(self.trajectory_floor, self.trajectory_factor * traj),
                "val_tol": max(self.val_floor, self.val_factor * val),
                "seed_trajectory_noise": traj, "seed_val_noise": val}

    @staticmethod
    def measure(trial: dict, base: dict) -> dict:
        """The evidence the verdict rests on, kept in tune.json beside it: mean |Δloss| over the
        measured steps and the validation-loss difference (trial − baseline; > 0 is worse)."""
        val = (trial["val_loss"] - base["val_loss"]
               if trial.get("val_loss") is not None and base.get("val_loss") is not None else None)
        return {"loss_deviation": _mean_abs(trial["losses"], base["losses"]), "val_delta": val}

    def check(self, trial: dict, base: dict, tol: dict, same_math: bool) -> tuple[bool, str | None]:
        losses = trial["losses"] + ([trial["val_loss"]] if trial["val_loss"] is not None else [])
        if any(x is None or not math.isfinite(x) for x in losses):
            return False, "non-finite loss"
        if same_math:
            d = _mean_abs(trial["losses"], base["losses"])
            if d > tol["trajectory_tol"]:
                return False, (f"loss trajectory moved {d:.3f} from the baseline's (tolerance "
                               f"{tol['trajectory_tol']:.3f}, the seed-to-seed noise)")
        if base["val_loss"] is not None and trial["val_loss"] is not None:
            if trial["val_loss"] > base["val_loss"] + tol["val_tol"]:
                return False, (f"validation loss {trial['val_loss']:.3f} worse than the baseline's "
                               f"{base['val_loss']:.3f} by more than {tol['val_tol']:.3f}")
        return True, None


def _mean_abs(a: list, b: list) -> float:
    n = min(len(a), len(b))
    if n == 0:
        return 0.0
    return sum(abs((a[i] or 0.0) - (b[i] or 0.0)) for i in range(n)) / n
