"""What every renderer shows beside the headline figures (issue #40): the reference rows (MFU
band, Megatron-LM's MFU/HFU table, % of the measured ceiling with the stop criterion, ETTR of
published large jobs; hardware/references.toml) and the path through seed 002's flowchart
(diagnose/flowchart.py). One function each, so the terminal, report.md and report.html say the
same words from the same records."""

from __future__ import annotations

from trainprof.diagnose.flowchart import flowchart, pct_of_achievable
from trainprof.hardware.references import context
from trainprof.recordtypes.analysis import Analysis
from trainprof.recordtypes.base import known
from trainprof.recordtypes.flowchart import Flowchart
from trainprof.recordtypes.run import RunRecord


def reference_rows(run: RunRecord | None, ettr: float | None = None) -> list[dict[str, str]]:
    """[{figure, value, reference}] for the run's MFU, its % of achievable and the ETTR."""
    if run is None:
        return context(None, None, "", ettr)
    ach, basis = pct_of_achievable(run)
    mfu = None if run.summary.mfu is None else float(run.summary.mfu)
    rows = context(mfu, ach, basis, ettr)
    why = run.achievable.why if run.achievable else None  # UNSET (an older record) is falsy
    if why:
        rows.append({"figure": "achievable ceiling", "value": "not measured", "reference": why})
    return rows


def chart(analysis: Analysis | None, run: RunRecord | None) -> Flowchart | None:
    """The flowchart's path as the records store it (analysis.json's, else run.json's: the same
    path where both exist, diagnose/flowchart.py), None when there is no record at all. A record
    written before the field existed gets its path computed here, from the same records."""
    for rec in (analysis, run):
        if rec is not None and known(rec.flowchart):
            return rec.flowchart
    rank = analysis.ranks[0] if analysis is not None and analysis.ranks else None
    if rank is None and run is None:
        return None
    return flowchart(rank, run)


def chart_field(analysis: Analysis | None, run: RunRecord | None) -> str | None:
    """The record field `chart` read (report/figures.py's names), None when computed here."""
    for name, rec in (("analysis", analysis), ("run", run)):
        if rec is not None and known(rec.flowchart):
            return f"{name}.flowchart"
    return None


def stop_line(mfu: float | None, measured_peak: bool = False) -> str | None:
    """tune/study's stop criterion for the best configuration's MFU (a fraction). MFU against a
    measured peak (a CPU) is the % of achievable; against a datasheet peak it is a lower bound
    of it, so only "stop" can be concluded from it, never "keep going"."""
    from trainprof.hardware.references import stop_criterion, stop_pct

    if mfu is None:
        return None
    pct = 100.0 * float(mfu)
    if measured_peak or pct >= stop_pct():
        return f"stop criterion: {stop_criterion(pct)}"
    return (f"stop criterion: MFU {pct:.0f}% of the datasheet peak is a lower bound of the % of achievable "
            f"(stop at ≥ {stop_pct():.0f}%); `trainprof bench matmul` measures the ceiling that decides it")
