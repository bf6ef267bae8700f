"""The parallelism axes' vocabulary: which axis a process group's description or name spells.

DeviceMesh describes the groups it creates as `mesh_<dim>` (torch 2.13; `mesh_dim_<dim>` in
some versions), so a mesh whose dimensions are named after their axis puts the axis in every
trace (distributedInfo.pg_config). The reader keeps only what a description spells here
(the raw text is the user's and never leaves the reader: a group_desc can hold anything).
"""

from __future__ import annotations

from trainprof import namematch

AXES = ("dp", "fsdp", "tp", "pp", "ep", "cp")
DEFAULT = "default_pg"  # torch's description of the default group

# order matters: dp_shard before dp. A token stands between separators (or the ends).
_TOKENS = tuple((namematch.compile(rf"(?:^|[^a-z0-9])(?:{p})(?:$|[^a-z])", ignorecase=True), axis) for p, axis in (
    (r"dp_shard|fsdp|shard", "fsdp"),
    (r"dp|ddp|data|replicate|dp_replicate|hsdp", "dp"),
    (r"tp|tensor", "tp"),
    (r"pp|pipe|pipeline|stage", "pp"),
    (r"ep|expert|moe", "ep"),
    (r"cp|context|sp|seq|ring", "cp"),
))
_MESH = namematch.compile(r"^mesh_(?:dim_)?")


def axis_of_name(text: str | None) -> str | None:
    """The axis a description or name spells (`mesh_tp` → tp), None if none."""
    if not text:
        return None
    m = _MESH.search(text)
    t = text[m.end():] if m else text
    for pat, axis in _TOKENS:
        if pat.search(t):
            return axis
    return None


def kept_desc(desc: str | None) -> str | None:
    """What the reader keeps of a description: the axis it spells, `default_pg`, or None."""
    return DEFAULT if desc == DEFAULT else axis_of_name(desc)
