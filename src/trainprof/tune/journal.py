"""An append-only journal of finished trials (JSON lines, fsync'd), so `--resume` after a
crash or `kill -9` continues without redoing a finished trial and loses nothing."""

from __future__ import annotations

from pathlib import Path

from trainprof import atomic


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        # a line torn by a kill mid-write is skipped: that trial simply reruns
        self.entries: dict[str, dict] = {e["trial_id"]: e for e in atomic.read_jsonl(path) if "trial_id" in e}

    def get(self, trial_id: str) -> dict | None:
        return self.entries.get(trial_id)

    def append(self, entry: dict) -> None:
        atomic.append_jsonl(self.path, entry)
        self.entries[entry["trial_id"]] = entry
