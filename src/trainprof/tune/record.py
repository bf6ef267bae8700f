"""tune.json: the ladder's result as a record (`trainprof tune`, `trainprof study`); its
shape is recordtypes/tune.py."""

from __future__ import annotations

import msgspec

from trainprof.recordtypes.tune import SCHEMA as TUNE_SCHEMA
from trainprof.recordtypes.tune import Tune
from typing import Any, Callable

from trainprof.tune.catalogue import Config
from trainprof.tune.reference import command as run_command


def tune_document(base: Config, result: dict, command: Callable[[Config], str] = run_command,
                  extra: dict[str, Any] | None = None) -> Tune:
    """The tune.json record of a `run_ladder` result whose baseline config was `base`
    (checked against its Struct on the way: a ladder that wrote a field of the wrong type
    fails here, not in the report). `command` gives the shell line of a shown config (default:
    the `trainprof run` that reproduces it); `extra`: more top-level fields (a program's)."""
    b = result["baseline"]
    best_cfg = result["best_config"]
    verify = result["verify"]
    kept = [t for t in result["trials"] if t.get("accepted")]
    if best_cfg == base:
        speedup = 1.0
    elif verify and verify.get("speedup_median") is not None:
        speedup = verify["speedup_median"]
    else:  # no verify pairs (--verify-trials 0): the last kept knob's ladder trial
        speedup = (kept[-1].get("speedup") if kept else None) or 1.0
    doc = {
        "schema": TUNE_SCHEMA,
        "baseline": {"config": base, "step_time_s": b["step_time_s"], "tokens_per_s": b["tokens_per_s"],
                     "mfu": b["mfu"], "peak_memory_bytes": b["peak_memory_bytes"], "val_loss": b["val_loss"],
                     "command": command(base)},
        "tolerance": result["tolerance"],
        "trials": result["trials"],
        "best": {"config": best_cfg, "speedup": speedup,
                 "verify": verify, "command": command(best_cfg),
                 "knobs": [t["knob"] for t in result["trials"] if t.get("accepted")] if best_cfg != base else []},
    }
    if result.get("min_speedup") is not None:  # the keep rule the trials' reasons quote ("needs ≥ 1.03×")
        doc["min_speedup"] = round(result["min_speedup"], 6)
    if verify and verify.get("verdict"):
        doc["best"]["verdict"] = verify["verdict"]
    if result.get("unconfirmed"):
        u = result["unconfirmed"]
        doc["best"]["unconfirmed"] = {"knobs": u["knobs"], "reason": u["reason"], "command": command(u["config"]),
                                      "config": u["config"]}
    doc.update(extra or {})
    return msgspec.convert(doc, Tune)
