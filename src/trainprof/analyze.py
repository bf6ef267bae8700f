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

from trainprof.errors import InputError

TRACE_SUFFIXES = (".json", ".json.gz")


def expand_paths(paths: list[str]) -> list[Path]:
    """Files as given; folders expand to the trace files directly inside them, sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise InputError(f"{p}: no such file or folder")
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and f.name.endswith(TRACE_SUFFIXES))
            if not found:
                raise InputError(f"{p}: folder holds no trace files (*.json, *.json.gz)")
            out.extend(found)
        else:
            out.append(p)
    return out


def analyze_one(path: str, top_k: int) -> dict:
    from trainprof.analysis.trace_report import analyze_trace
    from trainprof.trace import read_trace

    return analyze_trace(read_trace(path), file=path, top_k=top_k)


def analyze_paths(paths: list[str], *, top_k: int = 10, jobs: int | None = None) -> dict:
    from trainprof.analysis.multirank import multi_rank
    from trainprof.analysis.trace_report import ANALYSIS_SCHEMA, rank_summary

    files = [str(p) for p in expand_paths(paths)]
    jobs = min(len(files), jobs or os.cpu_count() or 1)
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            ranks = list(pool.map(analyze_one, files, [top_k] * len(files)))
    else:
        ranks = [analyze_one(f, top_k) for f in files]
    ranks.sort(key=lambda r: (r["rank"], r["file"]))
    return {
        "schema": ANALYSIS_SCHEMA,
        "ranks": ranks,
        "multi_rank": multi_rank([rank_summary(r) for r in ranks]) if len(ranks) > 1 else None,
    }
