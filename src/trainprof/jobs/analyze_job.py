"""`trainprof analyze SOURCE...` as a job: the traces analysed (jobs/analyze.py: per rank,
then the job-level reduce), Nsight Compute's kernels put on the roofline (jobs/ncu.py), one
Perfetto trace of the whole job written from the tracks the per-rank workers laid out while
they held their trace (report/perfetto.py; no trace is read twice), and the --out folder
(analysis.json, plots, reports) staged and renamed into place only when complete.

cli/analyze.py parses the flags and prints; the output places are checked here before any work.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from trainprof.errors import UsageError
from trainprof.jobs.analyze_config import AnalyzeJob

if TYPE_CHECKING:  # msgspec and the record types: ~11 ms that `analyze --help` need not pay
    from trainprof.recordtypes.analysis import Analysis

UNREADABLE_SHOWN = 20  # unreadable traces named one by one on stderr; analysis.json lists them all


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

    o, e = job.output, job.engine
    if job.link is not None:
        from trainprof.hardware.references import link

        try:
            link(job.link)
        except ValueError as err:
            raise UsageError(f"--link: {err}") from None
    out = outdir.check_out(o.out, force=o.force) if o.out else None
    perfetto = check_perfetto(job.perfetto, o.force) if job.perfetto else None
    laid = map_ranks(list(job.paths), top_k=job.top.k, jobs=e.jobs, roof=job.roof, step=job.step, engine=e.engine,
                     ray_address=e.ray_address, ray_start_timeout_s=e.ray_start_timeout_s,
                     tracks=perfetto is not None)
    record = reduce_job([r for r, _ in laid], link=job.link)  # the typed record: written once, and returned to print
    if job.modules is not None:
        record = _only_modules(record, job.modules)
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
        with atomic.staged_dir(out, force=o.force) as stage:  # all files or none (SIGINT, ENOSPC)
            atomic.write_text(stage / "analysis.json", text)
            if job.plots:  # vl-convert adds ~0.46 s and ~90 MB (docs/reports.md): only when asked for
                from trainprof.report.plots import write_analysis_plots

                write_analysis_plots(record, stage)
            from trainprof.report.files import auto_report

            note = auto_report(stage, enabled=o.report, shown_as=out, texts={"analysis.json": text})
    return AnalyzeResult(record, text, out, note)


def _only_modules(record: Analysis, pattern: str) -> Analysis:
    import msgspec

    from trainprof.analysis.cost.modules import only_modules
    from trainprof.recordtypes.base import or_default
    from trainprof.userregex import compile_user

    rx = compile_user(pattern, "--modules")
    return msgspec.structs.replace(record, ranks=[
        msgspec.structs.replace(r, modules=only_modules(or_default(r.modules, None), rx)) if or_default(r.modules, None)
        else r for r in record.ranks])


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
