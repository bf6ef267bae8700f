"""`trainprof analyze SOURCE...` as a job: the traces analysed (jobs/analyze.py: per rank,
then the job-level reduce), Nsight Compute's kernels put on the roofline (jobs/ncu.py), one
Perfetto trace of the whole job written from the tracks the per-rank workers laid out while
they held their trace (report/perfetto.py; no trace is read twice), and the --out folder
(analysis.json, plots, reports) staged and renamed into place only when complete.

cli/analyze.py parses the flags and prints; the output places are checked here before any work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from trainprof.errors import UsageError
from trainprof.hardware.peaks import PeakOverrides
from trainprof.recordtypes.analysis import Analysis

UNREADABLE_SHOWN = 20  # unreadable traces named one by one on stderr; analysis.json lists them all


@dataclass(frozen=True)
class AnalyzeJob:
    paths: list[str]
    """trace files, folders, globs or URLs (jobs/sources.py)"""
    top: int = 10
    step: int | None = None
    roof: PeakOverrides = field(default_factory=PeakOverrides)
    jobs: int | None = None
    engine: str = "local"
    ray_address: str | None = None
    ray_start_timeout_s: float | None = None
    out: str | None = None
    """folder for analysis.json (and plots, reports); None: nothing written"""
    force: bool = False
    perfetto: str | None = None
    """also write the job's Perfetto trace here"""
    ncu: str | None = None
    """`ncu --csv --page raw` output to add to the roofline"""
    plots: bool = False
    report: bool = True


@dataclass(frozen=True)
class AnalyzeResult:
    record: Analysis
    text: str
    """analysis.json's text"""
    out: Path | None
    report_note: str | None
    """the line saying which reports were written, None when none were"""


def execute(job: AnalyzeJob, *, warn: Callable[[str], None] = lambda _: None) -> AnalyzeResult:
    """Analyse, add ncu, write Perfetto, then the folder; `warn` gets each warning (a line)
    as soon as the analysis is done, before anything is written."""
    from trainprof import atomic, jsontext, outdir
    from trainprof.jobs.analyze import map_ranks, reduce_job

    out = outdir.check_out(job.out, force=job.force) if job.out else None
    perfetto = check_perfetto(job.perfetto, job.force) if job.perfetto else None
    laid = map_ranks(job.paths, top_k=job.top, jobs=job.jobs, roof=job.roof, step=job.step, engine=job.engine,
                     ray_address=job.ray_address, ray_start_timeout_s=job.ray_start_timeout_s,
                     tracks=perfetto is not None)
    record = reduce_job([r for r, _ in laid])  # the typed record: written once, and returned to print
    if job.ncu:
        import msgspec

        from trainprof.jobs.ncu import ncu_block

        record = msgspec.structs.replace(record, ncu=ncu_block(job.ncu, record, job.roof))
    for line in warnings(record):
        warn(line)
    if perfetto is not None:
        from trainprof.report.perfetto import job_events, write_perfetto

        write_perfetto(perfetto, job_events(record, first_per_rank(laid)))
    text = jsontext.dumps(record) + "\n"
    note = None
    if out is not None:
        with atomic.staged_dir(out, force=job.force) as stage:  # all files or none (SIGINT, ENOSPC)
            atomic.write_text(stage / "analysis.json", text)
            if job.plots:  # matplotlib costs ~0.5 s to import: only when asked for
                from trainprof.report.plots import write_analysis_plots

                write_analysis_plots(record, stage)
            from trainprof.report.files import auto_report

            note = auto_report(stage, enabled=job.report, shown_as=out)
    return AnalyzeResult(record, text, out, note)


def warnings(record: Analysis) -> list[str]:
    """The job's warnings, then the unreadable traces (the first UNREADABLE_SHOWN by name)."""
    from trainprof.recordtypes.base import or_default

    lines = list(or_default(record.multi_rank.warnings, [])) if record.multi_rank else []
    bad = or_default(record.unreadable, [])
    lines += [f"skipped an unreadable trace: {e.error}" for e in bad[:UNREADABLE_SHOWN]]
    if len(bad) > UNREADABLE_SHOWN:
        lines.append(f"... and {len(bad) - UNREADABLE_SHOWN} more unreadable traces (analysis.json: unreadable)")
    return lines


def first_per_rank(laid: list) -> dict:
    """The laid-out tracks by rank: of several files claiming one rank, the first named (the
    analysis warns about them: duplicate_ranks)."""
    tracks: dict = {}
    for rec, t in laid:
        if t is not None:  # an unreadable trace has none
            tracks.setdefault(rec.rank, t)
    return tracks


def check_perfetto(path: str, force: bool) -> Path:
    """Before any work: the file's folder must exist, and the file must not, unless --force."""
    p = Path(path)
    if not p.parent.is_dir():
        raise UsageError(f"--perfetto {path}: folder {p.parent} does not exist")
    if p.exists() and (not force or not p.is_file()):
        raise UsageError(f"--perfetto {path}: already exists (pass --force to replace a file)")
    return p
