"""A host-bound finding names the Python functions that hold the step (py-spy's samples).

The rules decide *that* the host limits the step (launch_bound, host_sync, data_loading,
optimizer_bound: the bottlenecks below); py-spy's samples over the same window say *where*
the host's time went: the innermost user functions by share of samples
(analysis/timeline/host_stacks.py). The evidence gains one clause; the gain and rank are unchanged.
"""

from __future__ import annotations

from msgspec.structs import replace

from trainprof.recordtypes.finding import Finding
from trainprof.recordtypes.modules import HostStacks

HOST_BOTTLENECKS = frozenset({"host overhead", "data"})
HOST_FINDINGS = frozenset({"launch_bound", "host_sync", "data_loading", "optimizer_bound", "allocator_churn"})
NAMED = 3  # functions quoted in the evidence (the inclusive view: the program's own frames are not in it)


def host_clause(stacks: HostStacks) -> str:
    top = [f for f in stacks.top_total if f.total_pct > 0][:NAMED]
    if not top:
        return f"py-spy: no user function below the program's own frames in {stacks.samples:,} host samples"
    listed = ", ".join(f"{f.function} {f.total_pct:.1f}%" for f in top)
    return f"py-spy, {stacks.samples:,} host samples: the step's host time is held by {listed}"


def name_host_functions(findings: list[Finding], stacks: HostStacks | None) -> list[Finding]:
    if stacks is None:
        return findings
    out = []
    for f in findings:
        # an info finding (a contended machine, gain 0) claims no share of the step to explain
        if f.severity != "info" and (f.id in HOST_FINDINGS or f.bottleneck in HOST_BOTTLENECKS):
            f = replace(f, evidence=f"{f.evidence}; {host_clause(stacks)}")
        out.append(f)
    return out
