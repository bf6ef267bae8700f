"""Collective names: nccl-tests' spelling (all_reduce, reduce_scatter, ...), one for both the
per-trace communication block and the job analysis (issue #44 item 1).

analysis.json's `communication.collectives[].collective` read "allreduce", "reducescatter",
"alltoall", "sendrecv" before (a lower-cased kernel-name word) while `multi_rank.collectives`
read nccl-tests' names; OLD_NAMES maps the old words on read (recordtypes/timeline.py), so a
record written before still pairs with a new one."""

from __future__ import annotations

import functools

from trainprof import namematch

ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL = "all_reduce", "all_gather", "reduce_scatter", "all_to_all"
BROADCAST, SEND_RECV, SEND, RECV = "broadcast", "send_recv", "send", "recv"
BARRIER, REDUCE, GATHER, SCATTER, OTHER = "barrier", "reduce", "gather", "scatter", "other"

# Canonical names from kernel names and `Collective name` args, first match wins (so
# `ReduceScatter` is not `reduce`, `SendRecv` not `send`).
_PATTERNS = tuple(
    (namematch.compile(pattern, ignorecase=True), op)
    for pattern, op in (
        (r"all_?reduce", ALL_REDUCE),
        (r"all_?gather", ALL_GATHER),
        (r"reduce_?scatter", REDUCE_SCATTER),
        (r"all_?to_?all", ALL_TO_ALL),
        (r"broadcast", BROADCAST),
        (r"send_?recv", SEND_RECV),
        # was `(?<![a-z])send|Send` with re.I, whose second branch matches "send" anywhere: the same
        (r"send", SEND),
        (r"recv", RECV),
        (r"barrier", BARRIER),
        (r"reduce", REDUCE),
        (r"gather", GATHER),
        (r"scatter", SCATTER),
    )
)
NAMES = tuple(op for _, op in _PATTERNS) + (OTHER,)
ONE_SIDED = frozenset({SEND, RECV})  # point-to-point, one side of a transfer each
P2P = frozenset({SEND, RECV, SEND_RECV})

# the communication block's words before issue #44 (the kernel name's word, lower-cased)
OLD_NAMES = {
    "allreduce": ALL_REDUCE,
    "allgather": ALL_GATHER,
    "reducescatter": REDUCE_SCATTER,
    "alltoall": ALL_TO_ALL,
    "sendrecv": SEND_RECV,
}


# a job repeats a few names thousands of times: 7,032 calls, ~20 names on the DDP trace
@functools.lru_cache(maxsize=4096)
def canonical_op(name: str) -> str:
    """`ncclDevKernel_AllGather_RING_LL`, `_allgather_base`, `gloo:all_reduce` → `all_gather`…"""
    if name.startswith(("gloo:", "nccl:", "rccl:")):
        name = name.split(":", 1)[1]
    for pattern, op in _PATTERNS:
        if pattern.search(name):
            return op
    return OTHER


def read_name(name: str) -> str:
    """A collective name as a record stores it, old spelling mapped to the canonical one."""
    return OLD_NAMES.get(name, name)
