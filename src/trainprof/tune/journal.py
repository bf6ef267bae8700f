"""An append-only journal of finished trials (JSON lines, fsync'd), so `--resume` after a
crash or `kill -9` continues without redoing a finished trial and loses nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, dict] = {}
        if path.exists():
            for line in path.read_text("utf-8").splitlines():
                try:
                    e = json.loads(line)
                except ValueError:
                    continue  # a line torn by a kill mid-write: that trial simply reruns
                if isinstance(e, dict) and "trial_id" in e:
                    self.entries[e["trial_id"]] = e

    def get(self, trial_id: str) -> dict | None:
        return self.entries.get(trial_id)

    def append(self, entry: dict) -> None:
        line = json.dumps(entry, sort_keys=True) + "\n"
        # O_APPEND: each write lands at the end even if two writers raced; fsync: on disk
        # before we move on, so a kill -9 right after loses nothing.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        self.entries[entry["trial_id"]] = entry
