"""Idle causes: why the GPU waited (analysis/timeline/idle.py assigns one per gap), in the
order every table and chart lists them. The idle breakdown stores `<cause>_us`/`<cause>_pct`."""

from __future__ import annotations

DATA_LOADING, ALLOCATOR, HOST_SYNC, HOST_LAUNCH = "data_loading", "allocator", "host_sync", "host_launch"
OTHER, UNATTRIBUTED = "other", "unattributed"
CAUSES = (DATA_LOADING, ALLOCATOR, HOST_SYNC, HOST_LAUNCH, OTHER, UNATTRIBUTED)
