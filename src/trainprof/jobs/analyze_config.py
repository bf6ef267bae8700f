"""`trainprof analyze`'s configuration: the SOURCEs, the output, the tables, the per-rank
engine (jobs/engines.EngineConfig), the Perfetto export and the roofline's peaks; every flag of
the command is one of these fields (trainprof/flags.py). jobs/analyze_job.py runs it.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainprof.flags import option, section
from trainprof.hardware.overrides import PeakOverrides
from trainprof.jobs.engines import EngineConfig
from trainprof.options import OutputOptions, TopK


@dataclass(frozen=True)
class AnalyzeJob:
    """`trainprof analyze`'s configuration (its flags: trainprof/flags.py)."""

    paths: tuple[str, ...] = option((), positional=True, nargs="+", metavar="SOURCE")
    """trace file, folder, glob ('runs/job/rank*.json.gz', quoted) or fsspec URL (file://, s3:// with s3fs, gs://
    with gcsfs, ...)"""
    output: OutputOptions = section(OutputOptions(), flags=("out", "force", "json", "report"), helps={
        "out": "folder for analysis.json (default: print only); must not exist or be empty",
        "force": "replace what trainprof wrote in an existing --out (once the new one is complete; never other "
                 "files)",
        "json": "print analysis.json to stdout instead of tables",
        "report": "with --out: do not write report.html and report.md"})
    """where analysis.json goes (None: printed only)"""
    top: TopK = section(TopK())
    """top-K operators and kernels"""
    all_ranks: bool = option(False)
    """print every rank's tables (default: a job of more than 4 ranks prints the first, the slowest per step and the
    compute stragglers in full, and every rank in the job's tables)"""
    step: int | None = option(None, metavar="N")
    """analyse only ProfilerStep#N"""
    modules: str | None = option(None, metavar="PATTERN")
    """list only the module types this RE2 pattern matches in the per-module table (shares stay of all modules)"""
    engine: EngineConfig = section(EngineConfig())
    """how the per-rank analyses run"""
    perfetto: str | None = option(None, metavar="OUT.json.gz")
    """also write one trace of the whole job for ui.perfetto.dev: every rank, overlaps laid on extra lanes so
    nothing is dropped, plus collective waits, the critical path and the findings (docs/collectives.md)"""
    roof: PeakOverrides = section(PeakOverrides(), group="roofline", helps={
        "gpu_spec": "spec-table row to use (see `trainprof specs`) instead of the trace's device name"})
    """the user's peaks for the roofline"""
    plots: bool = option(False, group="roofline", off="--no-plots")  # --no-plots: the default since #16
    """with --out: also write roofline.png/.svg (report.html's Vega-Lite specs drawn by vl-convert; report.md
    links them; report.html draws its own charts)"""
    link: str | None = option(None, metavar="nvlink4|pcie5|ndr|...")
    """the link the ranks talk over (hardware/references.toml, as `bench allreduce --link`): the collectives'
    busbw is shown as a share of it; unset: the device's link where the job fits in one node (an SXM part's
    NVLink, a PCIe card's slot), else none (the link is never guessed)"""
    ncu: str | None = option(None, metavar="CSV", group="roofline")
    """`ncu --csv --page raw` output (see `trainprof ncu-command`): measured FLOPs and DRAM bytes per kernel on the
    same roofline"""
