"""The run journal: an append-only, fsync'd record of what a run did and when (wall clock),
across crashes and restarts. ETTR is computed from it (analysis/ettr.py).

Events: start (session), step (index, step time), checkpoint_save, checkpoint_load, eval,
end. A session killed by `kill -9` writes nothing more: the next `start` shows the restart.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from trainprof import atomic

NAME = "journal.jsonl"


class RunJournal:
    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / NAME

    def event(self, kind: str, **fields: object) -> None:
        atomic.append_jsonl(self.path, {"event": kind, "t": time.time(), "pid": os.getpid(), **fields})
