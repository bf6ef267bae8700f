"""Which of a rank's blocking host calls were waiting for a late peer (issue #39 item 3).

On an 8-rank job with one late rank, four others got a "high" host-sync finding each ("remove
.item()"): their long cudaStreamSynchronize returned ~50 µs after an NCCL kernel that was
itself waiting for the late rank. The sync is a symptom: the host waited for its GPU, which
waited for the peer. A blocking call on rank r is *released* by a collective c when it
returns within RELEASE_US after c ends on r and began before c ended; the part of it spent
while r waited for c's last arriver k (its wait interval, analysis/job/collectives_waits.py)
is attributed to k:

    sync_wait_r(k) = Σ_{syncs s released by c, last(c) = k} |s ∩ wait_r(c)|

on the aligned clocks (a rank's raw times − its clock offset). diagnose/job_rules.py moves a
rank's host_sync finding to k's finding when k explains most of its blocked time.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from trainprof.analysis.job.collectives_job import analyse, with_instances
from trainprof.recordtypes.collectives import RankCollectives
from trainprof.recordtypes.timeline import Spans

# a sync released by its stream's last kernel returns within tens of µs (the job: ~50 µs);
# 200 µs leaves room for a loaded host's wake-up without reaching the next collective
RELEASE_US = 200.0


def sync_waits(blocks: dict[int, RankCollectives | dict | None],
               syncs: dict[int, Spans | None]) -> dict[int, dict[int, float]]:
    """Per rank, per last arriver k: the µs of its blocking host calls spent waiting for k."""
    blocks = with_instances(blocks)
    if len(blocks) < 2 or not any(syncs.get(r) and syncs[r].start_us for r in blocks):
        return {}
    a = analyse(blocks)
    out: dict[int, dict[int, float]] = {}
    for r, xs in a.waits.intervals.items():
        sp = syncs.get(r)
        if not sp or not sp.start_us or not xs:
            continue
        s = np.asarray(sp.start_us, dtype=float) - a.offsets[r]
        e = np.asarray(sp.end_us, dtype=float) - a.offsets[r]
        got: dict[int, float] = defaultdict(float)
        for ws, we, last, ci in xs:
            _, _, c = a.matching.collectives[ci]
            end = a.end[r][c[r]]
            released = (e >= end) & (e <= end + RELEASE_US) & (s < end)
            if released.any():
                ov = np.minimum(e[released], we) - np.maximum(s[released], ws)
                got[last] += float(np.clip(ov, 0.0, None).sum())
        if got:
            out[r] = dict(got)
    return out
