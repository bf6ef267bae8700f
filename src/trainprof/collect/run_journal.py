"""The run journal: an append-only, fsync'd record of what a run did and when (wall clock),
across crashes and restarts. ETTR is computed from it (analysis/run/ettr.py).

Events: start (session), step (index, step time), checkpoint_save, checkpoint_load, eval,
end. A session killed by `kill -9` writes nothing more: the next `start` shows the restart.
`load_events` reads it back strictly: a torn last line is skipped, an event with a field
missing, null or of the wrong type is one line naming the file, the event and the field.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Optional

import msgspec

from trainprof import jsonl
from trainprof.errors import InputError

NAME = "journal.jsonl"


class RunJournal:
    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / NAME

    def event(self, kind: str, **fields: object) -> None:
        jsonl.append_jsonl(self.path, {"event": kind, "t": time.time(), "pid": os.getpid(), **fields})


class Event(msgspec.Struct, forbid_unknown_fields=False):
    """The fields analysis/run/ettr.py reads."""

    event: str
    t: float
    step: Optional[int] = None
    step_time_s: float = 0.0
    duration_s: float = 0.0


def load_events(path: Path) -> list[dict]:
    """The journal's events, checked (see the module docstring). Lines without "event" (a
    future kind of record) are ignored, as before."""
    out = []
    for i, e in enumerate(jsonl.read_jsonl(path), 1):
        if "event" not in e:
            continue
        try:
            ev = msgspec.convert(e, Event)
        except msgspec.ValidationError as err:
            raise InputError(f"{path}: event {i} ({str(e.get('event'))[:40]!r}): "
                             f"{str(err).replace(' - at `$', ' at `')}") from None
        bad = [f for f in ("t", "step_time_s", "duration_s") if not math.isfinite(getattr(ev, f)) or
               (f != "t" and getattr(ev, f) < 0)]
        if bad:
            raise InputError(f"{path}: event {i}: {bad[0]} must be a finite number ≥ 0")
        if ev.event == "step" and ev.step is None:
            raise InputError(f"{path}: event {i}: a step event without its `step` index")
        out.append(e)
    return out
