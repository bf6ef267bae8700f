"""tune.json: the ladder's result as a record (`trainprof tune`, `trainprof study`); its
shape is recordtypes/tune.py."""

from __future__ import annotations

from typing import Callable, Union

from msgspec import UNSET, UnsetType, structs

from trainprof.recordtypes.tune import ProgramTuneBlock, Tune, TuneBaseline, TuneBest
from trainprof.tune.catalogue import Config
from trainprof.tune.ladder import LadderResult
from trainprof.tune.reference import command as run_command


def tune_document(base: Config, result: LadderResult, command: Callable[[Config], str] = run_command,
                  program: Union[ProgramTuneBlock, UnsetType] = UNSET) -> Tune:
    """The tune.json record of a `run_ladder` result whose baseline config was `base`: the
    ladder's own Trial, Tolerance and Verify Structs, placed as they are (a field a Struct
    lacks fails where the ladder builds it). `command` gives the shell line of a shown config
    (default: the `trainprof run` that reproduces it); `program`: a program's block."""
    b, best_cfg, verify = result.baseline, result.best_config, result.verify
    kept = [t for t in result.trials if t.accepted]
    if best_cfg == base:
        speedup = 1.0
    elif verify and verify.speedup_median is not None:
        speedup = verify.speedup_median
    else:  # no verify pairs (--verify-trials 0): the last kept knob's ladder trial
        speedup = (kept[-1].speedup if kept else None) or 1.0
    u = result.unconfirmed
    best = TuneBest(config=best_cfg, speedup=speedup, verify=verify, command=command(best_cfg),
                    knobs=[t.knob for t in kept] if best_cfg != base else [],
                    verdict=verify.verdict if verify else UNSET,
                    unconfirmed=structs.replace(u, command=command(u.config)) if u else UNSET)
    return Tune(baseline=TuneBaseline(config=base, step_time_s=b["step_time_s"], tokens_per_s=b["tokens_per_s"],
                                      mfu=b["mfu"], peak_memory_bytes=b["peak_memory_bytes"], val_loss=b["val_loss"],
                                      command=command(base)),
                tolerance=result.tolerance, trials=result.trials, best=best,
                # the keep rule the trials' reasons quote ("needs ≥ 1.03×")
                min_speedup=UNSET if result.min_speedup is None else round(result.min_speedup, 6),
                program=program)
