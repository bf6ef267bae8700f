"""Read traces and analyse them, one process per trace when there are several.

A trace is parsed and analysed inside the worker and only the small record comes back, so
memory is one trace per worker and ranks run in parallel on all cores. A 1,000-rank job is
the same map over 1,000 files (`--jobs` workers at a time), followed by the cross-rank pass
over the per-rank records (a few KB each); see docs/trace-analysis.md.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from trainprof.analysis.roofline import Roof
from trainprof.errors import InputError
from trainprof.hardware.peaks import PeakOverrides, resolve_peaks

TRACE_SUFFIXES = (".json", ".json.gz")


def expand_paths(paths: list[str]) -> list[Path]:
    """Files as given; folders expand to the trace files directly inside them, sorted."""
    import errno
    import stat

    from trainprof.bounded import describe

    out: list[Path] = []
    for p in map(Path, paths):
        try:
            mode = os.stat(p).st_mode  # not Path.exists(): it calls a symlink loop "missing"
        except OSError as e:
            missing = e.errno == errno.ENOENT
            raise InputError(f"{p}: " + ("no such file or folder" if missing else describe(e))) from None
        if stat.S_ISDIR(mode):
            try:
                found = sorted(f for f in p.iterdir() if f.is_file() and f.name.endswith(TRACE_SUFFIXES))
            except OSError as e:
                raise InputError(f"{p}: cannot list the folder ({describe(e)})") from None
            if not found:
                raise InputError(f"{p}: folder holds no trace files (*.json, *.json.gz)")
            out.extend(found)
        else:
            out.append(p)
    return out


def resolve_roof(device_name: str | None, opts: PeakOverrides, measure_cpu: bool = True) -> Roof:
    """The roofs for a trace (hardware/peaks.py): spec-table row (by --gpu-spec or the trace's
    device name), measured on this machine for CPU-only traces, then the user's overrides."""
    measure_tflops = measure_bandwidth = None
    if measure_cpu:
        # A CPU-only trace: the roofs of *this* machine (right for `run --profile`; for a
        # trace recorded elsewhere, pass --peak-tflops / --peak-bandwidth-gbs).
        from trainprof.backends.cpu import measured_bandwidth_gbs, measured_matmul_tflops

        measure_tflops, measure_bandwidth = measured_matmul_tflops, measured_bandwidth_gbs
    p = resolve_peaks(device_name, opts, measure_tflops=measure_tflops, measure_bandwidth=measure_bandwidth)
    source = {"datasheet": f"datasheet:{p.spec.key}" if p.spec else "", "measured": "measured on this machine",
              "user": "user", "unknown": "unknown"}[p.origin]
    if p.user_bandwidth:
        source = "user" if source == "unknown" else source + "+user bandwidth"
    return Roof(p.tflops, p.bandwidth_gbs, source, device_name, p.hint if source == "unknown" else None)


def analyze_one(path: str, top_k: int, opts: PeakOverrides | None = None, step: int | None = None) -> dict:
    from trainprof.analysis.trace_report import analyze_trace
    from trainprof.trace import find_steps, link, read_trace

    trace = read_trace(path)
    if step is not None:
        from trainprof.trace.subset import step_subset

        links = link(trace)
        trace = step_subset(trace, links, find_steps(trace, links), step)
    return analyze_trace(trace, file=path, top_k=top_k, roof=resolve_roof(trace.device_name, opts or PeakOverrides()))


def analyze_paths(paths: list[str], *, top_k: int = 10, jobs: int | None = None,
                  roof: PeakOverrides | None = None, step: int | None = None) -> dict:
    from trainprof.analysis.multirank import multi_rank
    from trainprof.analysis.trace_report import ANALYSIS_SCHEMA, rank_summary

    files = [str(p) for p in expand_paths(paths)]
    jobs = min(len(files), jobs or os.cpu_count() or 1)
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            ranks = list(pool.map(analyze_one, files, [top_k] * len(files), [roof] * len(files),
                                  [step] * len(files)))
    else:
        ranks = [analyze_one(f, top_k, roof, step) for f in files]
    ranks.sort(key=lambda r: (r["rank"], r["file"]))
    for r in ranks:
        add_findings(r, None)
    multi = multi_rank([rank_summary(r) for r in ranks]) if len(ranks) > 1 else None
    if multi is not None:
        multi["warnings"] = duplicate_ranks(ranks)
        from trainprof.diagnose import diagnose_job

        multi["findings"] = diagnose_job(multi)
    return {"schema": ANALYSIS_SCHEMA, "ranks": ranks, "multi_rank": multi}


def add_findings(rank: dict, run: dict | None) -> None:
    """Diagnose one rank in place (with the run record when the trace came from `trainprof run`)."""
    from trainprof.diagnose import diagnose_rank
    from trainprof.diagnose.engine import principal

    rank["findings"] = diagnose_rank(rank, run)
    rank["bottleneck"] = principal(rank["findings"], rank, run)


def duplicate_ranks(ranks: list[dict]) -> list[str]:
    """Several files claiming one rank (a folder of unrelated single-GPU traces is all
    "rank 0"): the cross-rank comparison then compares unrelated jobs, so say so."""
    by_rank: dict = {}
    for r in ranks:
        by_rank.setdefault(r["rank"], []).append(Path(r["file"]).name)
    return [f"{len(files)} traces claim rank {rank} ({', '.join(files[:4])}{', ...' if len(files) > 4 else ''}): "
            "they may come from different jobs; the cross-rank comparison assumes one job"
            for rank, files in by_rank.items() if len(files) > 1]
