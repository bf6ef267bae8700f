"""The ladder in the terminal: fits 80 columns, states the guard, and says when the verify
pairs did not confirm the kept knobs."""

from __future__ import annotations

import msgspec
from rich.console import Console

from trainprof.recordtypes.tune import Tune
from trainprof.report.tune_terminal import print_ladder


def _trial(knob: str, step: float, gain: float, speedup: float, accepted: bool, dev: float) -> dict:
    return {"knob": knob, "ok": True, "step_time_s": step, "step_gain": gain, "speedup": speedup, "mfu": 0.31,
            "peak_memory_bytes": 3 * 2**30, "accuracy_ok": True, "accepted": accepted, "same_math": True,
            "loss_deviation": dev, "val_delta": 0.001,
            "reason": None if accepted else f"not faster: {gain:.3f}× the current best (needs ≥ 1.03×)"}


def _doc(unconfirmed: bool) -> dict:
    pair = {"base_tokens_per_s": 100.0, "best_tokens_per_s": 140.0, "ratio": 1.4}
    verify = {"pairs": [pair] * 3, "speedup_median": 1.01 if unconfirmed else 1.4, "speedup_min": 0.85,
              "speedup_max": 1.6}
    best = {"config": {}, "command": "trainprof run --preset tiny --dtype bf16", "verify": verify,
            "knobs": [] if unconfirmed else ["bf16"], "speedup": 1.0 if unconfirmed else 1.4}
    if unconfirmed:
        best["unconfirmed"] = {"knobs": ["bf16"], "reason": "the kept knobs measured 1.01× the baseline in 3 "
                               "alternating pairs (needs ≥ 1.03×)"}
    return {"baseline": {"config": {}, "step_time_s": 9.999, "tokens_per_s": 100.0, "mfu": 0.5, "peak_memory_bytes": 2**30},
            "tolerance": {"trajectory_tol": 0.302, "val_tol": 0.085},
            "trials": [_trial("bf16", 7.5, 1.333, 1.333, True, 0.0123),
                       _trial("activation_checkpointing", 12.5, 0.6, 0.8, False, 0.2)],
            "best": best}


def _text(doc: dict) -> str:
    con = Console(width=80, record=True, color_system=None)
    print_ladder(msgspec.convert(doc, Tune), con)  # checked against tune.json's Struct
    return con.export_text()


def test_fits_80_columns_with_every_column():
    text = _text(_doc(unconfirmed=False))
    table = text[: text.index("activation_checkpointing:")]
    assert max(len(line.rstrip()) for line in table.splitlines()) <= 80
    head = next(line for line in table.splitlines() if "knob" in line)
    assert head.split() == ["knob", "step", "×prev", "×base", "MFU", "mem", "acc", "kept"]
    row = next(line for line in table.splitlines() if line.strip().startswith("activation_checkpointing"))
    # 12.5 s is shown in seconds, as every report shows a time (report/figures.py); ×prev 0.60 vs ×base 0.80
    assert row.split()[1:6] == ["12.50", "s", "0.60", "0.80", "31%"] and row.split()[-1] == "no"
    # the guard's tolerance, and the largest deviation among the kept same-maths knobs (bf16's)
    assert "≤ 0.302 (seed-to-seed noise); kept knobs moved it at most 0.012" in " ".join(text.split())
    assert "best: 1.40× the baseline's tokens/s" in text


def test_unconfirmed_knobs_leave_the_baseline_best():
    flat = " ".join(_text(_doc(unconfirmed=True)).split())
    assert "best: the baseline: the kept knobs measured 1.01× the baseline in 3 alternating pairs" in flat
    assert "(0.85–1.60×), so bf16 not kept" in flat and "best: 1.01×" not in flat
