"""Run the rules, rank the findings, name the principal bottleneck."""

from __future__ import annotations

import dataclasses

from trainprof.analysis.graph.projection import rank_key, with_projection
from trainprof.analysis.run.step_split import PhaseShare, dominant, phases, seconds
from trainprof.diagnose import flowchart, machine_rules, rules  # noqa: F401 - importing them registers their rules
from trainprof.diagnose.flowchart import IDLE_CAUSES, idle_causes  # noqa: F401 (engine's public names)
from trainprof.diagnose.finding import Finding, Thresholds, cap_severity, severity
from trainprof.diagnose.registry import RULES, RuleInput, rank_rules
from trainprof.recordtypes.analysis import MultiRank, Rank
from trainprof.recordtypes.base import as_struct, or_default
from trainprof.recordtypes.run import RunRecord
from trainprof.vocab import parts


def diagnose_rank(rank: dict | Rank | None, run: dict | RunRecord | None = None,
                  th: Thresholds | None = None) -> list[Finding]:
    """Findings for one rank, biggest estimated gain first. `rank` is an analysis record
    (the analyser's dict or its Struct), `run` a run.json record (a RunRecord, or run.json's
    dict, converted once); either may be None."""
    th = th or Thresholds()
    r = as_struct(rank, Rank)
    run = as_struct(run, RunRecord)
    found: list[Finding] = []
    given = RuleInput(r, run, th)
    for one in rank_rules("rank"):  # each @rule(...) of rules.py and machine_rules.py, as declared
        f = one.fn(given)
        if f is not None:
            found.append(flowchart.data_kind(f, run) if f.id == "data_loading" else f)
    # rules over those findings: seed 002's "high utilisation, low throughput" (flowchart.py
    # busy_but_slow), what the efficiency findings above leave of the gap to the ceiling
    after = dataclasses.replace(given, found=tuple(found))
    for one in rank_rules("after"):
        f = one.fn(after)
        if f is not None:
            found.append(f)
    # next to each upper bound, what the re-timed dependency graph projects (or None) and, when
    # far below the bound, why; ranked by the projection where there is one (projection.py)
    whatif = r.whatif if r and r.whatif else None
    path = r.critical_path if r and r.critical_path else None
    out = [with_projection(f, RULES[f.id].scenario, RULES[f.id].path_kind, whatif, path) for f in found]
    # a finding about (nearly) nothing is info, whatever its bound, and goes last (the order kept)
    return cap_severity(sorted(out, key=rank_key), th)


def diagnose_run(rec: RunRecord) -> RunRecord:
    """run.json with its findings and the flowchart's path from the run record alone, no trace:
    what `trainprof run` stores without --profile and what Monitor.save (the HF and Lightning
    integrations) writes, so every run.json carries both as computed when it was written."""
    import msgspec

    return msgspec.structs.replace(rec, findings=diagnose_rank(None, rec), flowchart=flowchart.flowchart(None, rec))


def principal(findings: list[Finding], rank: dict | Rank | None, run: dict | RunRecord | None = None,
              th: Thresholds | None = None) -> str | None:
    """The principal bottleneck (docs/rules.md): the class of the top claim — the first
    non-info finding under the one ranking key of every list (projection.rank_key: its
    projected gain, else a discounted bound) — so the headline never contradicts the list
    under it. Without a claim (nothing above the noise), where the time goes: on a GPU trace
    its timeline, in two levels read off the two tables the report shows — the largest part
    of the GPU time (compute, exposed communication, memcpy, idle) and, when that is idle, its
    largest cause (data, host overhead, idle (unexplained)); else the run's step split
    (compute = forward + backward, a phase driven by a few outlier steps counted at its
    median)."""
    th = th or Thresholds()
    claims = sorted((f for f in findings if f.severity != "info"), key=rank_key)
    if claims:
        return claims[0].bottleneck
    return measured_principal(rank, run, th)


def measured_principal(rank: dict | Rank | None, run: dict | RunRecord | None = None,
                       th: Thresholds | None = None) -> str | None:
    """The class that takes the largest share of the measured time (principal's fallback)."""
    th = th or Thresholds()
    rank = as_struct(rank, Rank)
    run = as_struct(run, RunRecord)
    if rank and rank.has_gpu:
        named = timeline_principal(rank)
        if named:
            return named
    if run:
        d = dominant(rules.run_phases(run, th)) or dominant(_summary_phases(run))
        if d:
            return d[0]
    return None


def timeline_classes(rank: Rank) -> dict[str, float]:
    """Level one: the GPU time table's parts in % of the timeline (analysis/timeline/temporal.py), memset
    with memcpy and Kineto's stream-wait markers with idle (the GPU waits there)."""
    tb = rank.temporal_breakdown

    def v(name: str) -> float:
        return float(or_default(getattr(tb, f"{name}_pct", 0.0), 0.0) or 0.0)

    return {parts.COMPUTE: v(parts.COMPUTE), parts.COMMUNICATION: v(parts.COMMUNICATION),
            parts.MEMCPY: v(parts.MEMCPY) + v(parts.MEMSET), parts.IDLE: v(parts.IDLE) + v(parts.SYNC)}


def timeline_principal(rank: Rank) -> str | None:
    """The two-level choice of principal(); None for an empty timeline. A tie goes to compute:
    the named part is the largest row of its table (tests/unit/diagnose: test_severity_principal)."""
    c = timeline_classes(rank)
    if not any(c.values()):
        return None
    top = max(c, key=lambda k: (c[k], k == "compute"))
    if top != "idle":
        return top
    causes = idle_causes(rank)
    if not any(causes.values()):
        return "idle (unexplained)"
    cause = max(causes, key=lambda k: (causes[k], k != "idle (unexplained)"))
    return cause


def _summary_phases(run: RunRecord) -> list[PhaseShare]:
    """The mean split from run.json's summary (a record without per-step rows)."""
    s = run.summary
    t = s.step_time_s or 0.0
    if t <= 0:
        return []
    return [PhaseShare(p, v, v, 100.0 * v / t, 100.0 * v / t, False) for p in phases(s) for v in (seconds(s, p),)]


def diagnose_job(multi: dict | MultiRank | None) -> list[Finding]:
    """Job-level findings across ranks from compute alone (stragglers), where collectives
    could not be matched (job_rules.py does it from the collectives otherwise: the id is
    registered there, one rule per id)."""
    multi = as_struct(multi, MultiRank)
    if not multi or not multi.stragglers:
        return []
    out = []
    step = multi.step_time_us.median if multi.step_time_us else 0.0
    for s in multi.stragglers:
        gain = 100.0 * s.others_wait_us / step if step else s.compute_excess_pct
        gain = max(0.0, min(100.0, gain))
        out.append(Finding(
            id="stragglers", severity=severity(gain),
            title=f"Rank {s.rank} is a straggler: the others wait for it",
            evidence=f"rank {s.rank} computes {s.compute_excess_pct:.1f}% more per step than the median and "
                     f"spends {s.others_wait_us / 1e3:,.1f} ms less in collectives than the median rank",
            estimated_gain_pct=round(gain, 2),
            fix="look for what only this rank does: garbage-collection pauses (gc.disable() + gc.collect() every N "
                "steps), NUMA/CPU affinity (bind each rank to its GPU's socket), a larger data shard or longer "
                "sequences (balance by tokens), a slower or throttled GPU (nvidia-smi -q -d PERFORMANCE)",
            confidence="medium", bottleneck="communication"))
    return sorted(out, key=rank_key)
