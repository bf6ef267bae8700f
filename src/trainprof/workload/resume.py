"""What `run --resume` checks before it continues a run: the same run, and steps left to do.

A resumed run must be the run that was checkpointed: another seed, micro-batch, sequence
length, accumulation or world size changes the tokens per step, and another lr, dtype,
data or preset changes the math, so the "resumed" run would silently be a different one
(issue #19: resuming with another seed exited 0 and tokens/step changed mid-run). Knobs
that change neither (compile, optimizer implementation, attention kernel, workers, pinned
memory, activation checkpointing, gc) may differ: trying them is what resuming is for.
`--resume-anyway` continues with the new values after all, and says which ones.

The configuration compared is the one checkpoint.pt itself holds (read with
weights_only=True, weights mapped, not read), not checkpoint.json beside it: a deleted or
edited checkpoint.json used to let a changed --lr through with only an "older trainprof"
warning (issue #33). A checkpoint holding no configuration is refused unless --resume-anyway.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainprof.errors import UsageError
from trainprof.workload import checkpoint

# Fields whose change alters the tokens per step or the math of a step (TrainConfig names,
# plus the world size: data parallelism multiplies the global batch).
MATH_FIELDS = ("preset", "seed", "micro_batch", "seq_len", "grad_accum", "world_size", "lr", "weight_decay",
               "grad_clip", "dtype", "pad_vocab", "data", "strategy")


def differences(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """`field old → new` for each MATH_FIELDS entry that differs; a field the checkpoint's
    configuration lacks differs too (every trainprof.checkpoint/3 stores them all)."""
    out = []
    for f in MATH_FIELDS:
        if f not in before:
            out.append(f"{f} (absent) → {now.get(f)!r}")
        elif before[f] != now.get(f):
            out.append(f"{f} {before[f]!r} → {now.get(f)!r}")
    return out


def check(run_dir: Path, config: dict[str, Any], *, anyway: bool = False) -> list[str]:
    """Refuse (UsageError, one line) a resume whose configuration differs from the
    checkpoint's, or whose --steps is below the steps already done. Returns warnings."""
    meta = checkpoint.header(Path(run_dir))
    warnings = []
    if meta["config"] is None:
        where = Path(run_dir) / checkpoint.NAME
        if not anyway:
            raise UsageError(f"--resume {run_dir}: {where} holds no configuration to check this run against "
                             "(pass --resume-anyway to continue without the check)")
        warnings.append(f"{where} holds no configuration; resumed without checking it (--resume-anyway)")
    diffs = differences(meta["config"], config) if meta["config"] is not None else []
    if diffs and not anyway:
        raise UsageError(f"--resume {run_dir}: the configuration differs from the checkpoint's: {'; '.join(diffs)} "
                         "(pass the same values, or --resume-anyway to continue with the new ones)")
    if diffs:
        warnings.append("resuming with a different configuration (--resume-anyway): " + "; ".join(diffs))
    done = meta["step"]
    if config.get("steps") is not None and config["steps"] < done:
        raise UsageError(f"--steps {config['steps']}: the checkpoint in {run_dir} already holds {done} steps; "
                         f"pass --steps {done} or more")
    return warnings
