"""The fields each record must have, with their types, checked when `report` loads it.

A record that carries the right `schema` but lacks a field the renderers read, or holds
one of the wrong type (`{"schema": "trainprof.run/1"}`, `"ranks": [{}]`, a tune.json
without `best`), is refused here with one line naming the file and the field (issue #19:
these were KeyError tracebacks). msgspec checks them (`msgspec.convert`): fast, and its
messages give the path (`$.ranks[0].top_ops`).

Only what the renderers *index* is required; what they read with `.get()` stays optional,
so a record from an older trainprof still renders. Numbers are finite: JSON has no NaN,
and our loader (bounded.load_json) refuses the bare words.
"""

from __future__ import annotations

from typing import Any, Optional

import msgspec

from trainprof.errors import InputError

Num = float  # msgspec accepts an int where a float is declared


class _S(msgspec.Struct, forbid_unknown_fields=False):
    pass


# ------------------------------------------------------------------------ run.json
class RunStep(_S):
    step_time_s: Num


class RunSummary(_S):
    step_time_s: Num
    tokens_per_s: Num
    warmup_steps: int


class RunDevice(_S):
    name: str


class Run(_S):
    device: RunDevice
    model: dict[str, Any]
    config: dict[str, Any]
    steps: list[RunStep]
    summary: RunSummary


# ------------------------------------------------------------------------ analysis.json
class Named(_S):
    name: str


class Roofline(_S):
    source: Optional[str] = None


class Rank(_S):
    rank: int
    file: str
    temporal_breakdown: dict[str, Any]
    idle_breakdown: dict[str, Any]
    top_ops: list[Named]
    top_kernels: list[Named]
    roofline: Roofline
    roofline_points: list[Named]


class Analysis(_S):
    ranks: list[Rank]
    multi_rank: Optional[dict[str, Any]] = None


# ------------------------------------------------------------------------ tune.json
class TuneBaseline(_S):
    config: dict[str, Any]
    step_time_s: Num
    tokens_per_s: Num


class TuneTrial(_S):
    knob: str


class TuneBest(_S):
    config: dict[str, Any]
    speedup: Num


class Tune(_S):
    baseline: TuneBaseline
    trials: list[TuneTrial]
    best: TuneBest


# ------------------------------------------------------------------------ the others
class Memory(_S):
    max_micro_batch: Optional[int] = None


# The records still read as dicts; the typed ones (recordtypes/) are checked by their Struct.
SCHEMAS: dict[str, type] = {"run": Run, "analysis": Analysis, "optimised": Analysis, "tune": Tune,
                            "memory": Memory}


def check(path: Any, kind: str, doc: dict[str, Any]) -> None:
    """InputError naming `path` and the field when `doc` does not fit its record type."""
    t = SCHEMAS.get(kind)
    if t is None:
        return
    try:
        msgspec.convert(doc, t)
    except msgspec.ValidationError as e:
        raise InputError(f"{path}: {_readable(str(e))}") from None


def _readable(msg: str) -> str:
    """msgspec: "Object missing required field `best`" / "Expected `str`, got `null` - at `$.ranks[0].file`"."""
    return msg.replace(" - at `$", " at `").replace("`.", "`", 1) if " - at `$." in msg else msg.replace(" - at `$", " at `")
