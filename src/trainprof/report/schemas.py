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
from trainprof.recordtypes.base import readable

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


# ------------------------------------------------------------------------ the others
# The typed records (analysis, ettr, diff, bench, tune, memory) are decoded by
# recordtypes.base.load (report/loader.TYPED); run.json is checked here and read as a dict.
SCHEMAS: dict[str, type] = {"run": Run}


def check(path: Any, kind: str, doc: dict[str, Any]) -> None:
    """InputError naming `path` and the field when `doc` does not fit its record type."""
    t = SCHEMAS.get(kind)
    if t is None:
        return
    try:
        msgspec.convert(doc, t)
    except msgspec.ValidationError as e:
        raise InputError(f"{path}: {readable(str(e))}") from None
