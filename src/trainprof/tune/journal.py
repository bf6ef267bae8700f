"""An append-only journal of finished trials (JSON lines, fsync'd), so `--resume` after a
crash or `kill -9` continues without redoing a finished trial and loses nothing.

Each line is checked against `Entry` when read back: a line torn by a kill mid-write is
skipped (that trial simply reruns), but a whole line with a field missing or of the wrong
type is refused with one line naming the file, the line and the field: resuming on top of
it would build the ladder on numbers we cannot trust (issue #19).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import msgspec

from trainprof import jsonl
from trainprof.errors import InputError


class Entry(msgspec.Struct, forbid_unknown_fields=False):
    """The fields run_ladder reads back from a finished trial (ladder.TrialResult + ids)."""

    trial_id: str
    knob: str
    config: dict[str, Any]
    ok: bool
    tokens_per_s: float
    step_time_s: float
    losses: list[Optional[float]]  # null: a non-finite loss (JSON has no NaN)
    val_loss: Optional[float] = None
    reason: Optional[str] = None
    mfu: Optional[float] = None
    peak_memory_bytes: Optional[int] = None
    compile_s: float = 0.0
    wall_s: float = 0.0
    tokens_per_step: int = 0  # 0: unknown (a program's trial, a journal written before the field)
    notes: Optional[dict[str, Any]] = None  # a program trial's: what the agent did (tune/program.py)


def check_entries(path: Path, lines: list[dict]) -> dict[str, dict]:
    out = {}
    for i, e in enumerate(lines, 1):
        try:
            msgspec.convert(e, Entry)
        except msgspec.ValidationError as err:
            raise InputError(f"{path}: entry {i}: {str(err).replace(' - at `$', ' at `')}; "
                             "not a trainprof tune journal (move it away to start over)") from None
        out[e["trial_id"]] = e
    return out


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, dict] = check_entries(path, jsonl.read_jsonl(path))

    def get(self, trial_id: str) -> dict | None:
        return self.entries.get(trial_id)

    def append(self, entry: dict) -> None:
        jsonl.append_jsonl(self.path, entry)
        self.entries[entry["trial_id"]] = entry
