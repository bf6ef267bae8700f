"""`trainprof analyze SOURCE...` as a job: the traces analysed (jobs/analyze.py: per rank,
then the job-level reduce), Nsight Compute's kernels put on the roofline (jobs/ncu.py), one
Perfetto trace of the whole job written from the tracks the per-rank workers laid out while
they held their trace (report/perfetto.py; no trace is read twice), and the --out folder
(analysis.json, plots, reports) staged and renamed into place only when complete.

cli/analyze.py parses the flags and prints; the output places are checked here before any work.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

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
    rendered: Any = None
    """what `render(record)` returned (execute), None without one"""


def execute(job: AnalyzeJob, *, warn: Callable[[str], None] = lambda _: None,
            render: Callable[[Analysis], Any] | None = None) -> AnalyzeResult:
    """Analyse, add ncu, write Perfetto, then the folder; `warn` gets each warning (a line)
    as soon as the analysis is done, before anything is written; `render(record)` (the
    terminal's text) runs while the reports are written (_reports_beside)."""
    from trainprof import outdir

    o = job.output
    if job.link is not None:
        from trainprof.hardware.references import link

        try:
            link(job.link)
        except ValueError as err:
            raise UsageError(f"--link: {err}") from None
    out = outdir.check_out(o.out, force=o.force) if o.out else None
    perfetto = check_perfetto(job.perfetto, o.force) if job.perfetto else None
    # one trace: fork the report writer now, to warm up beside the read. Several: after the
    # pool (_execute), whose workers would share the cores with its warm-up (~0.08 CPU-s)
    writer = _report_writer() if out is not None and o.report and render is not None and _one_trace(job) else None
    try:
        return _execute(job, out, perfetto, warn, render, writer)
    finally:
        if writer is not None:
            writer.close()


def _execute(job: AnalyzeJob, out: Path | None, perfetto: Path | None, warn: Callable[[str], None],
             render: Callable[[Analysis], Any] | None, writer: Any) -> AnalyzeResult:
    from trainprof import atomic, jsontext
    from trainprof.forked import Called
    from trainprof.jobs.analyze import map_ranks, reduce_job

    o, e = job.output, job.engine
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
    note = rendered = None
    if out is not None:
        with atomic.staged_dir(out, force=o.force) as stage:  # all files or none (SIGINT, ENOSPC)
            atomic.write_text(stage / "analysis.json", text)
            if job.plots:  # vl-convert adds ~0.46 s and ~90 MB (docs/reports.md): only when asked for
                from trainprof.report.plots import write_analysis_plots

                write_analysis_plots(record, stage)
            late = _report_writer() if writer is None and o.report and render is not None and len(laid) > 1 else None
            try:
                note, rendered = _reports_beside(stage, o.report, out, text, record, render, writer or late)
            finally:
                if late is not None:
                    late.close()
    elif render is not None:
        rendered = render(record)
    if isinstance(rendered, Called):  # raised only now: a rendering error does not cost the folder
        rendered = rendered.result()
    return AnalyzeResult(record, text, out, note, rendered)


def _one_trace(job: AnalyzeJob) -> bool:
    """The job is one trace analysed in this process (jobs/analyze.map_ranks' own test)."""
    from trainprof.jobs.analyze import expand_paths

    return job.engine.engine == "local" and len(expand_paths(list(job.paths))) == 1


def _report_writer() -> Any:
    """A child forked now, before the trace is read, that imports the report renderers and
    loads their templates (report/files.py warm) while the analysis runs, then writes
    report.html and report.md from analysis.json's text (_write_reports). Those imports were
    most of the reports' time, and the second core is nearly idle while a trace is read
    (docs/benchmarks.md, "2026-11-29 later"). None where no fork is safe or no core is spare."""
    from trainprof.forked import Forked, can_fork, spare_core
    from trainprof.report.files import warm

    return Forked(_write_reports, returns=str | None, name="trainprof-reports", thread=False, warm=warm) \
        if can_fork() and spare_core() else None


def _write_reports(stage: bytes, shown_as: bytes, text: str) -> str | None:
    """The paths come as bytes (os.fsencode): a folder name that is not UTF-8 (b'o\\xfe') is a
    str with surrogates, which msgpack cannot carry to the child."""
    from trainprof.report.files import auto_report

    return auto_report(Path(os.fsdecode(stage)), shown_as=Path(os.fsdecode(shown_as)), texts={"analysis.json": text})


def _reports_beside(stage: Path, enabled: bool, shown_as: Path, text: str, record: Analysis,
                    render: Callable[[Analysis], Any] | None, writer: Any) -> tuple[str | None, Any]:
    """report.html and report.md written by `writer` (_report_writer) while `render(record)`
    (the terminal's text) runs here: ~max of the two instead of their sum. Without a writer,
    the reports first, then `render`, as before."""
    from trainprof.forked import Called
    from trainprof.report.files import auto_report

    if writer is None:
        note = auto_report(stage, enabled=enabled, shown_as=shown_as, texts={"analysis.json": text})
        return note, Called(render, (record,)) if render is not None else None
    writer.send(os.fsencode(stage), os.fsencode(shown_as), text)
    rendered = Called(render, (record,))
    return writer.result(), rendered


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
