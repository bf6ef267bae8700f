"""Each collective group's bus bandwidth as a share of the link's theoretical bandwidth (seed
002: compare the measured busbw with what the link can carry; issue #40).

    link_pct = 100 · median_busbw_gbs / link.gbs

Both are per direction (nccl-tests' busbw is what each link carries each way; the link rows in
hardware/references.toml are halved datasheet figures). The link is the user's (`analyze
--link`, the same keys as `bench allreduce --link`), else the device's link within one node
(references.toml's device_link: an SXM part's NVLink, a PCIe card's slot) when the job has no
more ranks than a node holds. Otherwise it is unknown: no share and a note, never a guess. Pure.
"""

from __future__ import annotations

import msgspec

from trainprof.hardware.references import Link, device_link
from trainprof.recordtypes.collectives import JobCollectives, LinkRef

UNKNOWN_NOTE = (
    "link unknown: busbw is not shown as a share of a link (pass --link nvlink4|pcie5|ndr|...; "
    "a job wider than one node talks over a network no trace names)"
)


def with_link_share(job: JobCollectives, user: Link | None, spec_key: str | None) -> JobCollectives:
    """`job` with `link` and each group's `link_pct`; unchanged where no group has a busbw (no
    share to give, no note to add)."""
    if not any(g.median_busbw_gbs is not None for g in job.groups):
        return job
    ranks = job.world_size if job.world_size is not msgspec.UNSET else job.ranks
    lk, basis = user, "given by --link"
    if lk is None:
        lk = device_link(spec_key, ranks)
        basis = f"the {spec_key} device's link within one node ({ranks} ranks)"
    if lk is None:
        notes = [*(job.notes or []), UNKNOWN_NOTE] if job.notes is not msgspec.UNSET else [UNKNOWN_NOTE]
        return msgspec.structs.replace(job, link=None, notes=notes)
    groups = [
        msgspec.structs.replace(
            g, link_pct=None if g.median_busbw_gbs is None else round(100.0 * float(g.median_busbw_gbs) / lk.gbs, 2)
        )
        for g in job.groups
    ]
    return msgspec.structs.replace(
        job, groups=groups, link=LinkRef(key=lk.key, name=lk.name, gbs=lk.gbs, source=lk.source, basis=basis)
    )
