"""ettr.json (`trainprof ettr DIR`): effective training time ratio from a run's journal.

Fields in the order they are written; analysis/run/ettr.py says how each is computed.
"""

from __future__ import annotations

from typing import Optional

from trainprof.recordtypes.base import Num, Record

SCHEMA = "trainprof.ettr/1"


class Ettr(Record, kw_only=True):
    schema: str = SCHEMA
    ettr: Optional[Num]
    """productive step time / wall time (a fraction); None for a zero-length journal"""
    wall_s: Optional[Num] = None
    """first start → last event"""
    productive_s: Optional[Num] = None
    """step time of the steps whose results survived"""
    lost_s: dict[str, Num] = {}
    """seconds lost, by cause (startup, checkpointing, evaluation, redone_steps, ...)"""
    lost_pct: dict[str, Num] = {}
    """each cause's share of wall_s, in percent (empty in files written before it existed)"""
    sessions: int = 0
    failures: int = 0
    """sessions that died (no `end` event) and were restarted"""
    steps_completed: int = 0
    finished: bool = False
    """the last session wrote an `end` event"""
