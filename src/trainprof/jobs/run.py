"""`trainprof run` as a job: train, analyse the profiled steps, diagnose, write the run folder.

cli/run.py parses the flags, draws the progress bar and prints; this module does the work
(`run_command`: the output folder, a relaunch under torchrun for --nproc, a rank other than
0's share, rank 0's run) and returns what it wrote. A plain run's folder appears only when complete (staged, then
renamed: atomic.staged_dir); a checkpointed or resumed run keeps its folder from the start,
because its checkpoints and journal must survive a crash.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from trainprof import atomic, jsontext, outdir, owned
from trainprof.bounded import env_int
from trainprof.collect.profiler import ProfileConfig
from trainprof.errors import UsageError
from trainprof.jobs.run_config import RunJob
from trainprof.recordtypes.analysis import Analysis
from trainprof.recordtypes.run import RunRecord, StepRecord
from trainprof.workload.config import TrainConfig


@dataclass(frozen=True)
class RankRun:
    """`trainprof run` on this process (rank 0 of a job, or a single process): its
    configuration and what this process decided from it."""

    job: RunJob
    """the command's configuration (jobs/run_config.py)"""
    cfg: TrainConfig
    """`job.train`, resolved"""
    out: Path
    """the run folder"""
    world: int = 1
    """ranks of the job (torchrun's WORLD_SIZE); > 1 with a profile: every rank's trace is kept"""

    @property
    def profile(self) -> ProfileConfig | None:
        """extra steps under torch.profiler (analysed into analysis.json) or Nsight Systems"""
        return self.job.run.profile_config


@dataclass(frozen=True)
class RunResult:
    record: RunRecord
    """run.json, with its findings"""
    analysis: Analysis | None
    """analysis.json of the profiled steps (torch.profiler), else None"""
    report_note: str | None
    """the line saying which reports were written, None when none were"""
    bottleneck: str | None = None
    """the principal bottleneck (diagnose/engine.py principal), the findings' headline"""
    out: Path | None = None
    """the run folder"""
    traces: Path | None = None
    """the profiled trace (trace.json.gz) or traces (traces/, several ranks) in it; None: not profiled"""


def execute(job: RankRun, *, on_step: Callable[[StepRecord], None] | None = None,
            on_trained: Callable[[], None] | None = None,
            write_report: Callable[[Path, Path], str | None] | None = None) -> RunResult:
    """Train, analyse, diagnose and write `job.out`. `on_trained` runs once training ends
    (or fails): the caller's progress bar stops there. `write_report(stage, shown_as)`
    writes the reports inside the folder before it appears."""
    o = job.job.output
    persistent = o.resume or job.cfg.checkpoint_every > 0
    if persistent:
        if o.force and not o.resume:
            outdir.clear_for_force(job.out)
        atomic.clean_stale(job.out)  # a killed run's temp files (.checkpoint.pt.<pid>.*.tmp)
        job.out.mkdir(parents=True, exist_ok=True)
    staged = contextlib.nullcontext(job.out) if persistent else atomic.staged_dir(job.out, force=o.force)
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
        rec = with_machine_state(with_achievable(rec))
        analysis = analyze_profile(stage, rec) if analyzed else None
        rec = with_findings(rec, analysis)
        atomic.write_text(stage / "run.json", rec.to_json())
        note = write_report(stage, job.out) if write_report is not None else None
    from trainprof.diagnose.engine import principal

    return RunResult(rec, analysis, note, principal(rec.findings, analysis.ranks[0] if analysis else None,
                                                    rec), job.out,
                     job.out / ("traces" if ranks else "trace.json.gz") if analyzed else None)


Progress = Callable[[], tuple[Callable[[StepRecord], None], Callable[[], None]]]


def run_command(job: RunJob, *, argv: Sequence[str] = (), progress: Progress | None = None,
                write_report: Callable[[Path, Path], str | None] | None = None) -> RunResult | int:
    """`trainprof run` on this process. A parent asked for `job.run.ranks.nproc` > 1 ranks relaunches
    the command (`argv`) under torchrun and returns its exit code; a rank other than 0 trains
    (and records the same profiled steps) and returns 0; rank 0, or a single process, runs the
    job and returns what it wrote. `progress()`: (on_step, on_trained) of the caller's progress
    display, made on rank 0 only."""
    world = env_int("WORLD_SIZE", 1)
    rank = env_int("RANK", 0)
    cfg, out, nproc = job.train.resolved(), job.output.out, job.run.ranks.nproc
    from trainprof.workload.layout_flags import layout_of

    layout_of(cfg, nproc if world == 1 else world)  # a layout that cannot work: one line, before any folder or rank
    folder = resume_dir(out) if job.output.resume else (out_dir(out, job.output.force) if rank == 0
                                                         else Path(out or "."))
    if cfg.checkpoint_every and cfg.strategy == "fsdp" and (nproc > 1 or world > 1):
        raise UsageError("--checkpoint-every with --strategy fsdp is not supported yet (sharded state); use ddp")
    if nproc > 1 and world == 1:
        check_before_launch(cfg, nproc)
        return launch(list(argv), nproc, folder if out is None else None)
    if rank != 0:
        # with --profile every rank records the same extra steps (their collectives must match); only
        # rank 0 resumes, snapshots memory or captures for Nsight Systems
        torch_only = dataclasses.replace(job.run, memory_snapshot=0, nsys_capture=False)
        mine = dataclasses.replace(job, run=torch_only, output=dataclasses.replace(job.output, resume=False,
                                                                                    resume_anyway=False))
        profile_other_rank(RankRun(mine, cfg, folder, world), rank)
        return 0  # rank 0 reports for the job
    on_step, on_trained = progress() if progress is not None else (None, None)
    check_capture(cfg, job.run.profile_config, job.run.memory_snapshot)
    return execute(RankRun(job, cfg, folder, world), on_step=on_step, on_trained=on_trained,
                   write_report=write_report)


def out_dir(arg: str | None, force: bool = False) -> Path:
    """The run folder: --out checked (outdir rules), or a fresh runs/<timestamp>."""
    return outdir.out_or_fresh(arg, force=force)


def resume_dir(out: str | None) -> Path:
    """--resume's folder: one with a checkpoint."""
    from trainprof.workload import checkpoint

    if not out or not checkpoint.exists(Path(out)):
        raise UsageError("--resume needs --out DIR of a run started with --checkpoint-every "
                         f"(no {checkpoint.NAME} in {out or 'an --out folder'})")
    return Path(out)


def launch(argv: list[str], nproc: int, out: Path | None) -> int:
    """Relaunch `trainprof run` (its command line `argv`) on `nproc` ranks with torchrun
    (jobs/torchrun.py); `out`: the folder chosen here when --out was not given."""
    from trainprof.jobs.torchrun import relaunch, strip_flag

    rest = strip_flag(list(argv), "--nproc")
    rest = rest[rest.index("run") + 1:]
    if out is not None:
        rest += ["--out", str(out)]
    return relaunch(["run", *rest], nproc, what="run")


def check_before_launch(cfg: TrainConfig, nproc: int) -> None:
    """What the parent can check before it starts `nproc` ranks: fail fast, once."""
    from trainprof.backends import resolve_device
    from trainprof.errors import InputError

    resolve_device(cfg.device)
    if cfg.bind_numa:  # a plan that cannot work (more ranks than cores) fails here, not in every rank
        from trainprof.errors import ResourceError
        from trainprof.workload.affinity import plan

        try:
            plan(cfg.device, nproc)
        except ResourceError as e:
            raise ResourceError(f"--bind-numa --nproc {nproc}: {e}") from None
    if cfg.data is not None and not Path(cfg.data).exists():
        raise InputError(f"--data {cfg.data}: no such file or folder")


def check_capture(cfg: TrainConfig, profile: ProfileConfig | None, memory_snapshot_steps: int) -> None:
    """--memory-snapshot and --nsys-capture need CUDA (the flags themselves are the CLI's to check)."""
    nsys = profile is not None and profile.tool == "nsys"
    if memory_snapshot_steps or nsys:
        from trainprof.backends import resolve_device

        dev = resolve_device(cfg.device)
        if memory_snapshot_steps and not dev.startswith("cuda"):
            raise UsageError("--memory-snapshot needs CUDA (it records the CUDA caching allocator's history); "
                             f"this run is on {dev}: use `trainprof memory` for a CPU breakdown")
        if nsys and not dev.startswith("cuda"):
            raise UsageError(f"--nsys-capture needs a CUDA device (Nsight Systems traces GPU work); "
                             f"this run is on {dev}")


def train_rank(job: RankRun, *, on_step: Callable[[StepRecord], None] | None = None,
               trace_path: Path | None = None, run_dir: Path | None = None) -> RunRecord:
    """The training itself; on ranks other than 0 of a job, all there is to do."""
    from trainprof.workload.trainer import train

    o, r = job.job.output, job.job.run
    return train(job.cfg, peaks=job.job.peaks, on_step=on_step, monitor=r.monitor, trace=r.trace_tool,
                 trace_path=trace_path, run_dir=run_dir, resume=o.resume, resume_anyway=o.resume_anyway,
                 memory_snapshot_steps=r.memory_snapshot, stop_at=r.stop_at)


RANK_TRACE_WAIT_S = 300.0  # after rank 0's own profile: the others finish theirs about together


def rank_traces_dir(out: Path) -> Path:
    """Where ranks other than 0 leave their traces: beside `out` (they do not know rank 0's
    staging folder); rank 0 moves them into `traces/` and removes it."""
    return out.parent / f".{out.name}.rank-traces"


def profile_other_rank(job: RankRun, rank: int) -> None:
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


def with_machine_state(rec: RunRecord) -> RunRecord:
    """The machine's state after the measured steps (backends/machine_state.py: CPU governor and
    clocks, GPU persistence, application clocks, throttle reasons; the GPUs' link from `nvidia-smi
    topo -m`, backends/gpu_topo.py), in run.json's environment."""
    import msgspec

    from trainprof.backends import machine_state as ms

    state = {"cpu": ms.read_cpu(), "gpus": ms.read_gpus() if rec.device.kind == "cuda" else []}
    if rec.device.kind == "cuda":  # the link between the GPUs, for the collectives (backends/gpu_topo.py)
        from trainprof.backends.gpu_topo import machine_link

        lk, why = machine_link(rec.device.spec_key)
        state["gpu_link"] = {"key": lk.key if lk else None, "gbs": lk.gbs if lk else None, "basis": why}
    return msgspec.structs.replace(rec, environment={**(rec.environment or {}), "machine_state": state})


def with_achievable(rec: RunRecord) -> RunRecord:
    """A GPU run with its device's cached matmul ceiling (backends/ceiling.py), read, never
    measured here: a sweep costs minutes of the device."""
    if rec.device.kind != "cuda":
        return rec
    import msgspec
    import torch

    from trainprof.backends import ceiling
    from trainprof.recordtypes.run_parts import Achievable

    found = ceiling.lookup(rec.device.name, rec.device.peak_dtype, torch.__version__)
    return msgspec.structs.replace(rec, achievable=msgspec.convert(found, Achievable))


def with_findings(rec: RunRecord, analysis: Analysis | None) -> RunRecord:
    """Diagnose the run (its step split) together with its trace analysis, if any; with the
    flowchart's path through the same two records (diagnose/flowchart.py)."""
    import msgspec

    from trainprof.diagnose.flowchart import flowchart

    rank = analysis.ranks[0] if analysis is not None and analysis.ranks else None
    if analysis is not None:
        return msgspec.structs.replace(rec, findings=analysis.ranks[0].findings or [],
                                       flowchart=flowchart(rank, rec))
    from trainprof.diagnose.engine import diagnose_run

    return diagnose_run(rec)


def analyze_profile(stage: Path, rec: RunRecord) -> Analysis:
    """Analyse the trace(s) just recorded (diagnosed together with the run's step split);
    write analysis.json and the roofline chart beside it. Several ranks: traces/rankR.json.gz,
    analysed as a job (collectives matched across ranks, docs/collectives.md)."""
    import msgspec

    from trainprof.jobs.analyze import add_findings, analyze_paths
    from trainprof.report.plots import write_analysis_plots

    multi = (stage / "traces").is_dir()
    result = analyze_paths([str(stage / "traces" if multi else stage / "trace.json.gz")], jobs=1)
    ranks = []
    for r in result.ranks:
        # relative to the run folder, not the staging path
        r = msgspec.structs.replace(r, file=f"traces/{Path(r.file).name}" if multi else "trace.json.gz")
        ranks.append(add_findings(r, rec) if r.rank == 0 else r)
    from trainprof.diagnose.flowchart import flowchart

    # the path through the run record too (reduce_job's has the trace alone): run.json's, the same
    result = msgspec.structs.replace(result, ranks=ranks, flowchart=flowchart(ranks[0] if ranks else None, rec))
    # the ranks the terminal prints in full (report/rank_detail.py): a roofline file costs ~0.75 s
    # (vl-convert, 5 ranks: 3.6-3.9 s); report.md links rank 0's; `analyze --plots` draws every rank's
    from trainprof.report.rank_detail import DETAIL_RANKS, detail_ranks

    write_analysis_plots(result, stage, [i for i, _ in detail_ranks(result, DETAIL_RANKS)])
    atomic.write_text(stage / "analysis.json", jsontext.dumps(result) + "\n")
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
