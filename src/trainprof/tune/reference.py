"""The reference workload's trial configurations: typed inside, sparse outside.

The ladder holds full `TrainConfig`s (workload/config.py) and its knobs edit them with
`dataclasses.replace`. What a user reads, and what names a trial in the journal, is the
*sparse* form: the fields the tuner pins (`PINNED`: the baseline's preset, batch, dtype, ...)
plus every field that differs from what `trainprof run` would do given those pinned flags
alone. It is the difference between two TrainConfigs, so

    TrainConfig(**sparse(cfg)).resolved() == cfg        (for a resolved cfg)

and `command(cfg)` — `trainprof run` + the flags of that dict, derived from the fields' types
(trainprof/flags.py) — is the trial's own command line and its exact reproduction.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from trainprof.workload.config import TrainConfig

# The fields a tune's baseline is made of: `trainprof tune` generates its workload flags from
# them, in this order; tune.json lists them with device and data last, data only when set.
PINNED = ("preset", "device", "micro_batch", "seq_len", "dtype", "attention", "optimizer", "data", "seed",
          "steps", "warmup_steps", "eval_batches")
_SHOWN = sorted(PINNED, key=lambda k: k in ("device", "data"))  # stable: the rest keep their order


def changed(a: TrainConfig, b: TrainConfig) -> dict[str, Any]:
    """The fields where `b` differs from `a`, with b's values, in TrainConfig's field order."""
    return {f.name: getattr(b, f.name) for f in dataclasses.fields(TrainConfig)
            if getattr(a, f.name) != getattr(b, f.name)}


def run_defaults(cfg: TrainConfig) -> TrainConfig:
    """What `trainprof run` does with only `cfg`'s pinned flags: every other knob at its default."""
    return TrainConfig(**{k: getattr(cfg, k) for k in PINNED}).resolved()


def sparse(cfg: TrainConfig) -> dict[str, Any]:
    """tune.json's "config" of `cfg` (resolved): the pinned fields, then what the knobs changed."""
    out = {k: getattr(cfg, k) for k in _SHOWN if not (k == "data" and cfg.data is None)}
    return {**out, **{k: v for k, v in changed(run_defaults(cfg), cfg).items() if k not in out}}


def from_sparse(d: Mapping[str, Any]) -> TrainConfig:
    """The inverse of `sparse`: a tune.json / journal "config" back to the full, resolved config."""
    return TrainConfig(**d).resolved()


def to_argv(cfg: TrainConfig | Mapping[str, Any]) -> list[str]:
    """`trainprof run` flags reproducing `cfg` (a TrainConfig, or an already sparse dict of its
    fields), sorted by name; from the fields' types, as `trainprof run` parses them."""
    from trainprof.flags import to_argv as config_argv

    return config_argv(TrainConfig, sparse(cfg) if isinstance(cfg, TrainConfig) else cfg)


def command(cfg: TrainConfig | Mapping[str, Any]) -> str:
    """The shell line that reproduces a trial; quoted (a --data path may hold spaces or quotes)."""
    from trainprof.controls import shell_join

    return shell_join(["trainprof", "run", *to_argv(cfg)])  # $'...' for a control character: shown, not sent
