"""`trainprof run` as a job: train, analyse the profiled steps, diagnose, write the run folder.

cli/run.py parses the flags, draws the progress bar and prints; this module does the work
and returns what it wrote. A plain run's folder appears only when complete (staged, then
renamed: atomic.staged_dir); a checkpointed or resumed run keeps its folder from the start,
because its checkpoints and journal must survive a crash.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from trainprof import atomic, owned
from trainprof.collect.profiler import ProfileConfig
from trainprof.hardware.peaks import PeakOverrides
from trainprof.records import RunRecord, StepRecord
from trainprof.workload.config import TrainConfig


@dataclass(frozen=True)
class RunJob:
    """One `trainprof run` on this process (rank 0 of a job, or a single process)."""

    cfg: TrainConfig
    """the workload, already `.resolved()`"""
    out: Path
    """the run folder"""
    peaks: PeakOverrides = PeakOverrides()
    """the user's peaks for MFU/HFU and the roofline"""
    profile: ProfileConfig | None = None
    """extra steps under torch.profiler (analysed into analysis.json) or Nsight Systems"""
    force: bool = False
    """replace a non-empty `out` (a plain run: once the new one is complete)"""
    resume: bool = False
    """continue the run in `out` from its last checkpoint"""
    resume_anyway: bool = False
    """with `resume`: continue even though the configuration differs from the checkpoint's"""
    system_interval_s: float | None = None
    """background sampling of utilisation, memory, IO and power; None: off"""
    memory_snapshot_steps: int = 0
    """CUDA allocation history over this many extra steps; 0: off"""
    world: int = 1
    """ranks of the job (torchrun's WORLD_SIZE); > 1 with `profile`: every rank's trace is kept"""
    stop_at: float | None = None
    """end the measured steps early, at a step boundary, so that the run ends by this time
    (seconds since the epoch; study and tune pass their deadline); None: run every step"""


@dataclass(frozen=True)
class RunResult:
    record: RunRecord
    """run.json, with its findings"""
    analysis: dict | None
    """analysis.json of the profiled steps (torch.profiler), else None"""
    report_note: str | None
    """the line saying which reports were written, None when none were"""


def execute(job: RunJob, *, on_step: Callable[[StepRecord], None] | None = None,
            on_trained: Callable[[], None] | None = None,
            write_report: Callable[[Path, Path], str | None] | None = None) -> RunResult:
    """Train, analyse, diagnose and write `job.out`. `on_trained` runs once training ends
    (or fails): the caller's progress bar stops there. `write_report(stage, shown_as)`
    writes the reports inside the folder before it appears."""
    persistent = job.resume or job.cfg.checkpoint_every > 0
    if persistent:
        if job.force and not job.resume:
            atomic.clear_for_force(job.out)
        atomic.clean_stale(job.out)  # a killed run's temp files (.checkpoint.pt.<pid>.*.tmp)
        job.out.mkdir(parents=True, exist_ok=True)
    staged = contextlib.nullcontext(job.out) if persistent else atomic.staged_dir(job.out, force=job.force)
    # a folder written as the run goes lists its files as they are written (owned.py); a staged one at the end
    tracked = owned.tracking(job.out) if persistent else contextlib.nullcontext()
    analyzed = job.profile is not None and job.profile.tool == "torch"
    ranks = analyzed and job.world > 1
    with tracked, staged as stage:
        if ranks:
            (stage / "traces").mkdir(exist_ok=True)
        trace = stage / "traces" / "rank0.json.gz" if ranks else stage / "trace.json.gz"
        try:
            rec = train_rank(job, on_step=on_step, trace_path=trace, run_dir=stage)
        finally:
            if on_trained is not None:
                on_trained()
        if trace.exists():
            owned.note(trace)  # written by torch.profiler, not by atomic.py
        if ranks:
            collect_rank_traces(job.out, stage, job.world)
        analysis = analyze_profile(stage, rec) if analyzed else None
        rec = with_findings(rec, analysis)
        atomic.write_text(stage / "run.json", rec.to_json())
        note = write_report(stage, job.out) if write_report is not None else None
    return RunResult(rec, analysis, note)


def train_rank(job: RunJob, *, on_step: Callable[[StepRecord], None] | None = None,
               trace_path: Path | None = None, run_dir: Path | None = None) -> RunRecord:
    """The training itself; on ranks other than 0 of a job, all there is to do."""
    from trainprof.workload.trainer import train

    return train(job.cfg, peaks=job.peaks, on_step=on_step, profile=job.profile, trace_path=trace_path,
                 run_dir=run_dir, resume=job.resume, resume_anyway=job.resume_anyway,
                 system_interval_s=job.system_interval_s,
                 memory_snapshot_steps=job.memory_snapshot_steps, stop_at=job.stop_at)


RANK_TRACE_WAIT_S = 300.0  # after rank 0's own profile: the others finish theirs about together


def rank_traces_dir(out: Path) -> Path:
    """Where ranks other than 0 leave their traces: beside `out` (they do not know rank 0's
    staging folder); rank 0 moves them into `traces/` and removes it."""
    return out.parent / f".{out.name}.rank-traces"


def profile_other_rank(job: RunJob, rank: int) -> None:
    """A rank other than 0: train, and with a torch.profiler profile run the same extra
    steps as rank 0 (their collectives must match) and publish the trace when complete."""
    if job.profile is None or job.profile.tool != "torch":
        train_rank(job)
        return
    shared = rank_traces_dir(job.out)
    shared.mkdir(parents=True, exist_ok=True)
    part = shared / f"rank{rank}.part.json.gz"
    train_rank(job, trace_path=part)
    os.replace(part, shared / f"rank{rank}.json.gz")  # complete: rank 0 may take it


def collect_rank_traces(out: Path, stage: Path, world: int) -> None:
    """Move the other ranks' finished traces into the staged folder's traces/ (rankR.json.gz)."""
    import shutil
    import time

    from trainprof.errors import ResourceError

    shared = rank_traces_dir(out)
    want = [shared / f"rank{r}.json.gz" for r in range(1, world)]
    deadline = time.monotonic() + RANK_TRACE_WAIT_S
    while not all(p.exists() for p in want):
        if time.monotonic() > deadline:
            missing = [p.name for p in want if not p.exists()]
            raise ResourceError(f"--profile: no trace from {', '.join(missing)} after {RANK_TRACE_WAIT_S:g} s "
                                f"(in {shared})")
        time.sleep(0.2)
    for p in want:
        os.replace(p, stage / "traces" / p.name)
        owned.note(stage / "traces" / p.name)
    shutil.rmtree(shared, ignore_errors=True)


def with_findings(rec: RunRecord, analysis: dict | None) -> RunRecord:
    """Diagnose the run (its step split) together with its trace analysis, if any."""
    if analysis is not None:
        return dataclasses.replace(rec, findings=analysis["ranks"][0]["findings"])
    from trainprof.diagnose import diagnose_rank

    return dataclasses.replace(rec, findings=diagnose_rank(None, rec.to_dict()))


def analyze_profile(stage: Path, rec: RunRecord) -> dict:
    """Analyse the trace(s) just recorded (diagnosed together with the run's step split);
    write analysis.json and the roofline chart beside it. Several ranks: traces/rankR.json.gz,
    analysed as a job (collectives matched across ranks, docs/collectives.md)."""
    from trainprof.jobs.analyze import add_findings, analysis_record, analyze_paths
    from trainprof.report.plots import write_analysis_plots

    multi = (stage / "traces").is_dir()
    result = analyze_paths([str(stage / "traces" if multi else stage / "trace.json.gz")], jobs=1)
    for r in result["ranks"]:
        # relative to the run folder, not the staging path
        r["file"] = f"traces/{Path(r['file']).name}" if multi else "trace.json.gz"
        if r["rank"] == 0:
            add_findings(r, rec.to_dict())
    write_analysis_plots(result, stage)
    atomic.write_text(stage / "analysis.json", atomic.dumps(analysis_record(result)) + "\n")
    return result


def folder_trace(path: str) -> str:
    """The trace a run folder (`run --profile`, `profile`) holds, for commands that compare
    traces: trace.json.gz, or rank 0's of traces/; any other path as given."""
    folder = Path(path)
    if not (folder / "run.json").is_file():
        return path
    for t in (folder / "trace.json.gz", folder / "traces" / "rank0.json.gz"):
        if t.is_file():
            return str(t)
    return path
