"""Kineto / Chrome traces -> columnar tables, parsed once (HTA's habit), read anywhere.

No torch here: this package needs numpy and msgspec only, so traces recorded on a GPU box
can be analysed on a laptop.
"""

from trainprof.trace.kinds import Kind
from trainprof.trace.links import Links, link
from trainprof.trace.reader import read_trace
from trainprof.trace.steps import Steps, find_steps, step_of
from trainprof.trace.tables import Collectives, Device, Flows, GpuDetail, Trace, TraceMeta

__all__ = [
    "Kind", "read_trace", "Trace", "TraceMeta", "Device", "Flows", "GpuDetail", "Collectives",
    "Links", "link", "Steps", "find_steps", "step_of",
]
