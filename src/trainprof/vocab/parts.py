"""The temporal breakdown's parts: what the GPU timeline's span is made of
(analysis/timeline/temporal.py), in the order every table and chart lists them. The
breakdown stores `<part>_us`/`<part>_pct`; idle is what no busy part covers."""

from __future__ import annotations

COMPUTE, COMMUNICATION, MEMCPY, MEMSET, SYNC, IDLE = "compute", "communication", "memcpy", "memset", "sync", "idle"
BUSY = (COMPUTE, COMMUNICATION, MEMCPY, MEMSET, SYNC)  # the kinds of GPU rows, in priority order
PARTS = (*BUSY, IDLE)
