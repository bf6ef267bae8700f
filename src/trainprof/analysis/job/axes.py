"""Which parallelism axis each process group serves, from what the traces record.

Rules, in order (the first that decides is named in the record, per group):

1. `name`: the group's description or name names the axis. DeviceMesh describes the groups
   it creates as `mesh_<dim>` (torch 2.13; `mesh_dim_<dim>` in some versions), so a mesh
   whose dimensions are named `dp`, `tp`, `pp`... puts the axis in every trace
   (distributedInfo.pg_config; NCCL kernels also carry `Process Group Name`). Tokens
   (trace/process_groups.py): dp / ddp / data / replicate → dp; dp_shard / fsdp / shard →
   fsdp; tp / tensor → tp; pp / pipe / pipeline / stage → pp; ep / expert / moe → ep;
   cp / context / sp / seq / ring → cp.
2. `mesh`: the layout trainprof's own run recorded (`trainprof_mesh`): ranks laid out row-major
   over the dimensions (init_device_mesh's arange(world).view(sizes)); a group whose rank
   set is one dimension's line is that dimension's axis.
3. `shape`: the rank set alone, by convention (the record says so). The whole world: `pp`
   when it carries send/recv, `dp` in a job with no other group, else `world` (a collective
   of every rank, such as the loss's mean: no one axis). A smaller group: `pp` when it
   carries send/recv, `tp` when its ranks are consecutive (tensor parallel is the innermost
   dimension in torchtitan's and Megatron-LM's orders: it talks the most, so it gets the
   nearest ranks), else `dp`.

Limits: a group none of the three decides is `unknown`; gloo traces not written by trainprof
record no group per collective, so all of them are one `default` group (docs/collectives.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainprof.recordtypes.base import or_default
from trainprof.recordtypes.collectives import RankCollectives
from trainprof.trace.process_groups import axis_of_name
from trainprof.vocab import collectives as cv

AXES = ("dp", "fsdp", "tp", "pp", "ep", "cp", "world", "unknown")
P2P_OPS = cv.P2P

@dataclass(frozen=True)
class GroupInfo:
    name: str
    desc: str | None
    ranks: tuple[int, ...]
    p2p: bool  # carries send/recv


def mesh_lines(dims: list[tuple[str, int]]) -> dict[tuple[int, ...], str]:
    """{rank set: dimension name} of every line of a row-major mesh."""
    sizes = [n for _, n in dims]
    world = 1
    for n in sizes:
        world *= n
    out: dict[tuple[int, ...], str] = {}
    strides = _strides(sizes)
    for i, (name, n) in enumerate(dims):
        for r in range(world):
            if (r // strides[i]) % n == 0:
                out[tuple(r + k * strides[i] for k in range(n))] = name
    return out


def groups_of(blocks: dict[int, RankCollectives]) -> dict[str, GroupInfo]:
    """Every process group the ranks' collectives ran in, with its ranks where recorded."""
    listed: dict[str, tuple[str | None, tuple[int, ...]]] = {}
    for b in blocks.values():
        for g in or_default(b.process_groups, None) or []:
            listed[g.name] = (g.desc, tuple(g.ranks))
    used: dict[str, set[int]] = {}
    p2p: set[str] = set()
    for r, b in blocks.items():
        for g, op in zip(b.group, b.op):
            used.setdefault(g, set()).add(r)
            if op in P2P_OPS:
                p2p.add(g)
    default_pg = [v for v in listed.values() if v[0] == "default_pg"]
    if "default" not in listed and len(default_pg) == 1:
        # a collective the trace names no group for (a kernel matched to no record) ran in torch's
        # default group, which the trace lists: the placeholder is that group. Before, on the
        # public MI300 DDP rank it was a 1-rank group that the shape rule called `tp`.
        listed["default"] = default_pg[0]
    return {g: GroupInfo(g, listed.get(g, (None, ()))[0], listed.get(g, (None, tuple(sorted(rs))))[1], g in p2p)
            for g, rs in used.items()}


def classify(groups: dict[str, GroupInfo], world: int, dims: list[tuple[str, int]] | None
             ) -> dict[str, tuple[str, str]]:
    """{group: (axis, rule)} by the module docstring's rules."""
    lines = mesh_lines(dims) if dims else {}
    others = [g for g in groups.values() if len(g.ranks) < world]
    out = {}
    for g in groups.values():
        axis = axis_of_name(g.desc) or axis_of_name(g.name)
        if axis:
            out[g.name] = (axis, "name")
        elif tuple(sorted(g.ranks)) in lines:
            out[g.name] = (axis_of_name(lines[tuple(sorted(g.ranks))]) or "unknown", "mesh")
        elif not g.ranks:
            out[g.name] = ("unknown", "none")
        else:
            out[g.name] = (_by_shape(g, world, bool(others)), "shape")
    return out


def _by_shape(g: GroupInfo, world: int, others: bool) -> str:
    ranks = sorted(g.ranks)
    if g.p2p:
        return "pp"
    if len(ranks) >= world:
        return "world" if others else "dp"
    return "tp" if ranks == list(range(ranks[0], ranks[0] + len(ranks))) else "dp"


LABEL_ORDER = ("dp", "fsdp", "tp", "pp", "ep", "cp")  # how a rank's coordinates are written: dp0·tp1·pp0


def rank_coordinates(ranks: list[int], dims: list[tuple[str, int]] | None,
                     groups: list[tuple[str, list[int]]]) -> dict[int, dict[str, int]]:
    """{rank: {axis: index}}: from the recorded mesh (row-major, outer to inner), else from
    the classified groups (its index in the largest group of each axis that holds it: the
    DeviceMesh's own line; a smaller group on the axis, e.g. the tied-embedding pair on `pp`,
    is not a line of the mesh). Axes without a group (world, unknown) give no coordinate."""
    if dims:
        sizes = [n for _, n in dims]
        strides = _strides(sizes)
        return {r: {name: (r // st) % n for (name, n), st in zip(dims, strides)} for r in ranks}
    best: dict[tuple[int, str], list[int]] = {}
    for axis, members in groups:
        if axis not in LABEL_ORDER:
            continue
        for r in members:
            if len(members) > len(best.get((r, axis), [])):
                best[(r, axis)] = sorted(members)
    return {r: {axis: m.index(r) for (q, axis), m in best.items() if q == r} for r in ranks}


def _strides(sizes: list[int]) -> list[int]:
    out = [1] * len(sizes)
    for i in range(len(sizes) - 2, -1, -1):
        out[i] = out[i + 1] * sizes[i + 1]
    return out


def coordinate_label(coord: dict[str, int]) -> str:
    """`dp0·tp1·pp0` (the axes in LABEL_ORDER; empty without coordinates)."""
    return "·".join(f"{a}{coord[a]}" for a in LABEL_ORDER if a in coord)
