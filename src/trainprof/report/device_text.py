"""The device as a report names it: one label per rank, from the record's `device` block
(hardware/identity.py), so the terminal, report.md, report.html and the plots agree. The
trace's events decide GPU or CPU (`has_gpu`), never a blank name field."""

from __future__ import annotations

from trainprof.recordtypes.analysis import Rank
from trainprof.recordtypes.base import or_default


def device_label(rank: Rank) -> str:
    """The header line: the name (with family and arch), or what is known of an unnamed GPU.
    Records written before the `device` block say what `has_gpu` says."""
    dev = or_default(rank.device, None)
    if dev is not None:
        return dev.label
    name = or_default(rank.device_name, None)
    return name or ("GPU not named in the trace" if rank.has_gpu else "no GPU activity (CPU-only trace)")


def device_short(rank: Rank) -> str:
    """For a chart title: the name, else "GPU (≥ sm_80)" / "GPU" / "CPU"."""
    name = or_default(rank.device_name, None)
    if name:
        return name
    dev = or_default(rank.device, None)
    if not rank.has_gpu:
        return "CPU"
    arch = (dev.arch or (f"≥ {dev.min_arch}" if dev.min_arch else None)) if dev is not None else None
    return f"unnamed GPU ({arch})" if arch else "unnamed GPU"
