"""Read traces and analyse them, one worker per trace when there are several.

A trace is parsed and analysed inside the worker and only the small record comes back, so
memory is one trace per worker and ranks run in parallel (jobs/engines.py: a local process
pool, or Ray tasks across a cluster). A 1,000-rank job is the same map over 1,000 traces
followed by the job-level reduce over the per-rank records (a few KB each, reduce_job);
see docs/scale.md. A trace that cannot be read costs its rank, named with its error in
`unreadable`, not the job; only a job where no trace could be read fails (exit code 2).
With `--perfetto` each worker also lays out its trace's events for the export while the
trace is in memory (report/perfetto.py RankTracks), so no trace is read twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
from msgspec import UNSET

from trainprof.analysis.cost.roofline import Roof
from trainprof.errors import InputError, UsageError
from trainprof.hardware.identity import DeviceIdentity
from trainprof.hardware.peaks import PeakOverrides, resolve_peaks
from trainprof.jobs.sources import TRACE_SUFFIXES, expand
from trainprof.options import TopK
from trainprof.recordtypes.analysis import Analysis, Finding, MultiRank, Rank, Unreadable

if TYPE_CHECKING:
    from trainprof.recordtypes.run import RunRecord
    from trainprof.report.perfetto import RankTracks

__all__ = ["TRACE_SUFFIXES", "analyze_paths", "expand_paths"]


def expand_paths(paths: list[str]) -> list[Path | str]:
    """Files as given; folders and globs expand to the trace files they hold, sorted; URLs
    stay strings (jobs/sources.py)."""
    from trainprof.jobs.sources import is_url

    return [f if is_url(f) else Path(f) for f in expand(paths)]


def resolve_roof(device: "str | DeviceIdentity | None", opts: PeakOverrides, measure_cpu: bool = True) -> Roof:
    """The roofs for a trace (hardware/peaks.py): the spec-table row (by --gpu-spec, the
    trace's device name, or the one row its architecture implies), measured on this machine
    only for a trace with no sign of a GPU, then the user's overrides. `device`: the trace's
    identity (trace/device.py), or a device name (None: a CPU)."""
    ident = device if isinstance(device, DeviceIdentity) else None
    gpu = ident.gpu if ident is not None else device is not None
    measure_tflops = measure_bandwidth = None
    if measure_cpu and not gpu and not opts.gpu_spec:
        # A CPU-only trace: the roofs of *this* machine (right for `run --profile`; for a
        # trace recorded elsewhere, pass --peak-tflops / --peak-bandwidth-gbs). Never for a
        # GPU trace: its CPU ops ran elsewhere, and measuring costs seconds.
        from trainprof.backends.cpu import measured_bandwidth_gbs, measured_matmul_tflops

        measure_tflops, measure_bandwidth = measured_matmul_tflops, measured_bandwidth_gbs
    name = ident.name if ident is not None else device
    p = resolve_peaks(name, opts, measure_tflops=measure_tflops, measure_bandwidth=measure_bandwidth, identity=ident)
    source = {"datasheet": f"datasheet:{p.spec.key}" if p.spec else "", "measured": "measured on this machine",
              "user": "user", "unknown": "unknown"}[p.origin]
    if p.assumed:
        source += f" (assumed from {ident.arch})"
    if p.user_bandwidth:
        source = "user" if source == "unknown" else source + "+user bandwidth"
    slow = [d for d in ("bf16", "fp16") if p.origin == "measured" and p.tflops.get(d) and p.tflops.get("fp32")
            and p.tflops[d] < p.tflops["fp32"]]
    if slow:  # emulated 16-bit matmuls (backends/cpu_peak.py): their roof is below fp32's
        source += "; no native " + "/".join(slow) + " matmul (" + ", ".join(
            f"{d} {p.tflops[d]:.3g}" for d in slow) + f" < fp32 {p.tflops['fp32']:.3g} TFLOP/s)"
    hint = p.hint if p.origin == "unknown" else p.assumed  # an assumed row says which and why
    if p.spec is not None and not p.tflops:  # a row with the memory roof only (GB10)
        hint = ((hint + "; ") if hint else "") + \
            f"{p.spec.key} has no published dense peak: pass --peak-tflops (`trainprof bench matmul` measures one)"
    return Roof(p.tflops, p.bandwidth_gbs, source, name, hint)


def analyze_one(path: str, top_k: int, opts: PeakOverrides | None = None, step: int | None = None,
                segment_budget: int | None = None, overlap: bool = False) -> Rank:
    """One trace's record (without findings: add_findings); `overlap`: the graph work on a
    second thread (analyze_trace)."""
    return analyze_laid_out(path, top_k, opts, step, segment_budget, overlap)[0]


def analyze_laid_out(path: str, top_k: int, opts: PeakOverrides | None = None, step: int | None = None,
                     segment_budget: int | None = None, overlap: bool = False,
                     tracks: bool = False) -> tuple[Rank, RankTracks | None]:
    """One trace's record and, with `tracks`, its events laid out for the Perfetto export
    (report/perfetto.py), taken from the whole trace as read (before --step's subset: the
    export shows every event, the analysis the step) while it is in memory."""
    from trainprof.analysis.graph.critical_path import SEGMENT_BUDGET
    from trainprof.analysis.trace_report import analyze_trace
    from trainprof.trace import find_steps, link, read_trace
    from trainprof.trace.device import trace_identity

    trace = read_trace(path)
    laid = None
    if tracks:
        from trainprof.report.perfetto import rank_tracks

        laid = rank_tracks(trace)
    if step is not None:
        from trainprof.trace.subset import step_subset

        links = link(trace)
        trace = step_subset(trace, links, find_steps(trace, links), step)
    device = trace_identity(trace)
    rank = analyze_trace(trace, file=path, top_k=top_k, roof=resolve_roof(device, opts or PeakOverrides()),
                         segment_budget=segment_budget or SEGMENT_BUDGET, overlap=overlap, device=device)
    return _with_host_stacks(rank, path), laid


def _with_host_stacks(rank: Rank, path: str) -> Rank:
    """The py-spy samples recorded beside the trace (--py-spy), when there are any."""
    from trainprof.analysis.timeline.host_stacks import read_host_stacks

    stacks = read_host_stacks(path)
    return msgspec.structs.replace(rank, host_stacks=stacks) if stacks is not None else rank


def analyze_source(source: str, top_k: int, opts: PeakOverrides | None = None, step: int | None = None,
                   segment_budget: int | None = None, tracks: bool = False
                   ) -> tuple[Rank | Unreadable, RankTracks | None]:
    """One rank of a job, on any engine: its record, or Unreadable (file, error) when its trace cannot
    be read (a local path, or a URL fetched from storage by this worker); with `tracks`, its
    events laid out for the Perfetto export (None for an unreadable trace)."""
    from trainprof.jobs.sources import fetch

    try:
        with fetch(source) as local:
            r, laid = analyze_laid_out(local, top_k, opts, step, segment_budget, tracks=tracks)
        return msgspec.structs.replace(r, file=source), laid
    except (InputError, UsageError) as e:
        return Unreadable(file=source, error=str(e)), None
    except MemoryError:
        return Unreadable(file=source, error=f"{source}: out of memory while reading the trace"), None


def analyze_paths(paths: list[str], *, top_k: int = TopK.k, jobs: int | None = None,
                  roof: PeakOverrides | None = None, step: int | None = None, engine: str = "local",
                  ray_address: str | None = None, ray_start_timeout_s: float | None = None) -> Analysis:
    """The job's analysis record (reduce_job) of the traces `paths` name."""
    return reduce_job([r for r, _ in map_ranks(paths, top_k=top_k, jobs=jobs, roof=roof, step=step, engine=engine,
                                               ray_address=ray_address, ray_start_timeout_s=ray_start_timeout_s)])


def map_ranks(paths: list[str], *, top_k: int = TopK.k, jobs: int | None = None,
              roof: PeakOverrides | None = None, step: int | None = None, engine: str = "local",
              ray_address: str | None = None, ray_start_timeout_s: float | None = None,
              tracks: bool = False) -> list[tuple[Rank | Unreadable, RankTracks | None]]:
    """Per trace, in the order `paths` name them: its record (or its error) and, with
    `tracks`, its events laid out for the Perfetto export."""
    from trainprof.jobs.engines import START_TIMEOUT_S, EngineConfig, run_map

    cfg = EngineConfig(engine, jobs, ray_address,
                       START_TIMEOUT_S if ray_start_timeout_s is None else ray_start_timeout_s)
    files = [str(p) for p in expand_paths(paths)]
    if len(files) == 1 and engine == "local":  # one trace: its error is the command's error
        from trainprof.jobs.sources import fetch

        # the one process has the machine to itself: overlap the graph work with the rest
        with fetch(files[0]) as local:  # a URL: a bounded local copy first
            r, laid = analyze_laid_out(local, top_k, roof, step, overlap=True, tracks=tracks)
        return [(r if local == files[0] else msgspec.structs.replace(r, file=files[0]), laid)]
    from trainprof.analysis.graph.critical_path import job_segment_budget

    budget = job_segment_budget(len(files))
    return run_map(analyze_source, [(f, top_k, roof, step, budget, tracks) for f in files], cfg)


def reduce_job(results: list[Rank | Unreadable], link: str | None = None) -> Analysis:
    """The job's analysis record from per-rank records (and per-rank errors), on the driver:
    the same pure reduce for every engine; each rank diagnosed, the job findings added; the
    collectives' busbw put against `link` (a references.toml key, checked by the caller), else
    the device's link within a node (analysis/job/link_share.py). Raises InputError when no
    rank could be read."""
    bad = sorted((r for r in results if isinstance(r, Unreadable)), key=lambda e: e.file)
    ranks = sorted((r for r in results if not isinstance(r, Unreadable)), key=lambda r: (r.rank, r.file))
    if not ranks:
        first = bad[0].error if bad else "no traces"
        more = f" (and {len(bad) - 1} more unreadable traces)" if len(bad) > 1 else ""
        raise InputError(f"no trace could be read: {first}{more}")
    found = [rank_findings(r, None) for r in ranks]
    multi = job_reduce(ranks, found) if len(ranks) > 1 else None
    if multi is not None and multi.collectives:
        from trainprof.analysis.job.link_share import with_link_share
        from trainprof.hardware.references import link as link_row
        from trainprof.recordtypes.base import or_default

        dev = or_default(ranks[0].device, None)
        multi = msgspec.structs.replace(multi, collectives=with_link_share(
            multi.collectives, link_row(link), dev.spec_key if dev is not None else None))
    if multi is not None:  # the job rules may have moved a rank's findings to a culprit's: its headline again
        from trainprof.diagnose.engine import principal

        found = [(f, principal(f, r, None)) for r, (f, _) in zip(ranks, found)]
    ranks = [with_findings(r, f, b) for r, (f, b) in zip(ranks, found)]  # after the job rules rewrote some
    from trainprof.diagnose.flowchart import flowchart

    # the first rank's path through seed 002's chart, as the reports show it (trace alone: no run.json)
    return Analysis(ranks=ranks, multi_rank=multi, unreadable=bad or UNSET, flowchart=flowchart(ranks[0], None))


def job_reduce(ranks: list[Rank], found: list[tuple[list[Finding], str | None]]) -> MultiRank:
    """multi_rank: the ranks compared, their collectives matched, the job's findings (which
    may rewrite a rank's findings in `found`: job_rules.explain_waits)."""
    from trainprof.analysis.job.bubble import job_pipeline
    from trainprof.analysis.job.collectives_job import job_collectives, with_instances
    from trainprof.analysis.job.multirank import multi_rank, reconcile_stragglers
    from trainprof.analysis.trace_report import rank_summary
    from trainprof.diagnose import diagnose_job
    from trainprof.diagnose.job_rules import diagnose_collectives
    from trainprof.diagnose.pipeline_rules import pipeline_findings

    multi = multi_rank([rank_summary(r) for r in ranks])
    by_rank = {r.rank: r.collectives for r in ranks}
    job = job_collectives(by_rank) if len(by_rank) == len(ranks) else None
    # a compute straggler the matched collectives contradict is dropped
    stragglers, job = reconcile_stragglers(multi.stragglers, job)
    pipeline = job_pipeline(with_instances(by_rank), job) if len(by_rank) == len(ranks) else None
    multi = msgspec.structs.replace(multi, stragglers=stragglers, warnings=duplicate_ranks(ranks), collectives=job,
                                    pipeline=pipeline)
    comm = [(r.rank, (r.communication.total_us if r.communication else 0.0) or 0.0, f)
            for r, (f, _) in zip(ranks, found)]
    # the compute-based guess (multirank.py) only where collectives could not be matched
    job_found = diagnose_collectives(comm, multi, sync_waited=_sync_waited(ranks, by_rank)) if job and job.matched \
        else diagnose_job(multi)
    job_found += pipeline_findings(pipeline)
    return msgspec.structs.replace(multi, findings=job_found)


def _sync_waited(ranks: list[Rank], blocks: dict) -> dict[int, tuple[float, dict[int, float]]]:
    """Per rank with a host_sync finding: its blocking calls' total µs and the µs of them a
    collective waiting for each other rank released (analysis/job/symptoms.py)."""
    from trainprof.analysis.job.symptoms import sync_waits
    from trainprof.recordtypes.base import or_default

    syncs = {r.rank: or_default(r.sync_spans, None) for r in ranks}
    by = sync_waits(blocks, syncs)
    out = {}
    for r in ranks:
        if r.rank in by:
            total = sum(c.total_us for c in r.idle_breakdown.sync_calls)
            out[r.rank] = (float(total), by[r.rank])
    return out


def rank_findings(rank: Rank, run: RunRecord | None) -> tuple[list[Finding], str | None]:
    """One rank's findings (with the run record when the trace came from `trainprof run`)
    and its principal bottleneck (diagnose/engine.py)."""
    from trainprof.diagnose import diagnose_rank
    from trainprof.diagnose.engine import principal

    from trainprof.diagnose.host_stacks import name_host_functions
    from trainprof.recordtypes.base import or_default

    findings = name_host_functions(diagnose_rank(rank, run), or_default(rank.host_stacks, None))
    return findings, principal(findings, rank, run)


def with_findings(rank: Rank, findings: list[Finding], bottleneck: str | None) -> Rank:
    """The rank's record with its findings (the rules' Structs, as they built them)."""
    return msgspec.structs.replace(rank, findings=findings, bottleneck=bottleneck)


def add_findings(rank: Rank, run: RunRecord | None) -> Rank:
    """The rank diagnosed alone (with the run record when the trace came from `trainprof run`)."""
    return with_findings(rank, *rank_findings(rank, run))


def duplicate_ranks(ranks: list[Rank]) -> list[str]:
    """Several files claiming one rank (a folder of unrelated single-GPU traces is all
    "rank 0"): the cross-rank comparison then compares unrelated jobs, so say so."""
    by_rank: dict = {}
    for r in ranks:
        by_rank.setdefault(r.rank, []).append(Path(r.file).name)
    return [f"{len(files)} traces claim rank {rank} ({', '.join(files[:4])}{', ...' if len(files) > 4 else ''}): "
            "they may come from different jobs; the cross-rank comparison assumes one job"
            for rank, files in by_rank.items() if len(files) > 1]
