"""Which process group a gloo collective ran in, and the peer of a point-to-point op.

NCCL traces carry `Process Group Name` on each kernel (collectives.py reads it). torch 2.13's
gloo traces carry no group on a collective (checked on a 4-rank DeviceMesh job: neither the
`c10d::<op>` call nor the `gloo:<op>` annotation has one); each `gloo:<op>` runs on a worker
thread of its group. trainprof's own parallel runs record which worker thread serves which
group (`trainprof_mesh.threads`, workload/mesh.py); a thread that map does not know leaves
its collectives in the `default` group (as every gloo collective was before).

gloo's send/recv run on the calling thread (`gloo:send` / `gloo:recv` on the main thread);
their `c10d::send` / `c10d::recv_` call records the peer as a rank *within its group*
(Concrete Inputs, with record_shapes). The group: the pipeline group of the recorded mesh
(`mesh_pp`), else the default group (its ranks = the world's) — the global peer is that
group's ranks[local].
"""

from __future__ import annotations

from trainprof.trace import Trace
from trainprof.trace.process_groups import DEFAULT
from trainprof.vocab import collectives as cv

P2P = cv.ONE_SIDED


def thread_groups(t: Trace) -> dict[int, str]:
    """{worker thread id: group name} as the run recorded it ({} for other traces)."""
    return dict(t.meta.mesh.threads) if t.meta.mesh is not None else {}


def p2p_group(t: Trace) -> tuple[str, tuple[int, ...]] | None:
    """(name, ranks) of the group gloo's point-to-point ops of this rank use (module docstring)."""
    groups = t.meta.process_groups
    pp = [g for g in groups if g.desc == "pp"]  # DeviceMesh's mesh_pp, as the reader keeps it
    if pp:
        return pp[0].name, pp[0].ranks
    world = [g for g in groups if g.desc == DEFAULT] or sorted(groups, key=lambda g: -len(g.ranks))[:1]
    if world:
        return world[0].name, world[0].ranks
    return ("default", tuple(range(t.world_size))) if t.world_size else None


def p2p_peer(t: Trace, call_row: int | None, ranks: tuple[int, ...] | None) -> int | None:
    """The global peer of a `c10d::send` / `c10d::recv_` call: its third argument (dst/src
    rank in the group), mapped through the group's ranks."""
    if call_row is None or ranks is None:
        return None
    cid = int(t.concrete_id[call_row])
    if cid < 0:
        return None
    vals = t.arg_values[cid]
    try:
        local = int(vals[2])
    except (IndexError, TypeError, ValueError):
        return None
    return ranks[local] if 0 <= local < len(ranks) else None
