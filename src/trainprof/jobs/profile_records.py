"""The run folder of `trainprof profile`, from the parts its ranks wrote (inject/window.py).

Layout, as `trainprof run` writes it: run.json (rank 0's record, with the job view under
"distributed" when there are several ranks), ranks/rankR.json (every rank's record, several
ranks only), trace.json.gz or traces/rankR.json.gz, analysis.json (the profiled steps
analysed as `trainprof analyze DIR` does: per rank, then collectives matched across ranks),
report.html and report.md. run.json adds `command`, `status`, `exit_code` and `profile`
(docs/profile.md).
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import msgspec

from trainprof import atomic
from trainprof.inject.options import ProfileOptions
from trainprof.recordtypes.analysis import Analysis
from trainprof.recordtypes.run import RunRecord, run_from_dict
from trainprof.recordtypes.run_parts import Distributed, Profile, RankRow

SECRET = re.compile(r"token|secret|passw|api[-_]?key|credential|auth", re.IGNORECASE)


@dataclass(frozen=True)
class Parts:
    ranks: dict[int, dict[str, Any]]
    """rank → its part: {"rank", "record" (run.json of its measured steps, or None), "profile"}"""
    procs: list[dict[str, Any]]
    """processes that trained but never claimed a rank (proc-PID.json), and the top process"""
    traces: dict[int, Path]
    """rank → its complete trace"""
    claimed: frozenset[int] = frozenset()
    """ranks a process claimed (its first step): it trained under the agent, whatever it wrote"""

    @property
    def measured(self) -> bool:
        return any(p.get("record") for p in self.ranks.values())


@dataclass(frozen=True)
class Written:
    out: Path
    record: RunRecord
    """run.json: the first rank's record, with findings"""
    analysis: Analysis | None
    traces: str | None
    """"trace.json.gz", "traces" or None"""
    report_note: str | None
    bottleneck: str | None = None
    """the principal bottleneck of run.json's findings (diagnose/engine.py principal)"""


def _with_host_stacks(part: Path, dest: Path) -> None:
    """Move a rank's trace into the run folder, and its py-spy samples (--py-spy) beside it."""
    from trainprof.analysis.timeline.host_stacks import sibling

    os.replace(part, dest)
    spy = sibling(part.with_name(part.name.replace(".trace.json.gz", ".trace.part.json.gz")))
    if spy.is_file():
        os.replace(spy, sibling(dest))


def _load(path: Path) -> dict[str, Any] | None:
    from trainprof.bounded import load_object
    from trainprof.errors import InputError

    try:
        return load_object(path)  # bounded in size and decoding cost (#45)
    except InputError:
        return None  # a part being replaced right now, or a broken one: as if absent


def read_parts(folder: Path) -> Parts:
    ranks: dict[int, dict] = {}
    procs: list[dict] = []
    traces: dict[int, Path] = {}
    claimed: set[int] = set()
    for f in sorted(folder.iterdir()):
        if m := re.fullmatch(r"rank(\d+)\.json", f.name):
            if (d := _load(f)) is not None:
                ranks[int(m.group(1))] = d
        elif m := re.fullmatch(r"rank(\d+)\.trace\.json\.gz", f.name):
            traces[int(m.group(1))] = f
        elif re.fullmatch(r"proc-\d+\.json", f.name) and (d := _load(f)) is not None:
            procs.append(d)
        elif m := re.fullmatch(r"claim-rank(\d+)", f.name):
            claimed.add(int(m.group(1)))
    return Parts(ranks, procs, traces, frozenset(claimed))


def window_complete(folder: Path) -> bool:
    """Every rank of this machine has written a complete window (their count: LOCAL_WORLD_SIZE)."""
    found = [d for f in folder.glob("rank*.json") if re.fullmatch(r"rank\d+\.json", f.name)
             and (d := _load(f)) is not None]
    if not found or not all(d["profile"].get("window_complete") for d in found):
        return False
    return len(found) >= max(int(d["profile"].get("local_world_size") or 1) for d in found)


def status(returncode: int | None, complete: bool, options: ProfileOptions) -> str:
    if returncode is None:
        return "running"
    if returncode == 0:
        return "stopped" if options.stop_after and complete else "completed"
    if returncode in (-signal.SIGINT, 128 + signal.SIGINT):
        return "interrupted"
    return "crashed"


def redact(command: list[str]) -> list[str]:
    """The command as recorded: the value of any flag whose name says token, secret, password,
    key or auth is replaced by *** (run.json travels; the user's credentials must not)."""
    out: list[str] = []
    hide_next = False
    for a in command:
        if hide_next:
            out.append("***")
            hide_next = False
        elif a.startswith("-") and "=" in a and SECRET.search(a.split("=", 1)[0]):
            out.append(a.split("=", 1)[0] + "=***")
        else:
            hide_next = a.startswith("-") and bool(SECRET.search(a))
            out.append(a)
    return out


def compose(stage: Path, out: Path, found: Parts, command: list[str], returncode: int | None,
            options: ProfileOptions, *, write_report: Callable[[Path, Path], str | None] | None = None) -> Written:
    """Write run.json, the traces, analysis.json and the reports into `stage` (the folder that
    becomes `out`)."""
    from trainprof.jobs.run import analyze_profile, with_findings

    recs = {r: msgspec.structs.replace(run_from_dict(p["record"]), command=redact(command),
                                       profile=msgspec.convert(p["profile"], Profile))
            for r, p in sorted(found.ranks.items()) if p.get("record")}
    first = min(recs)
    complete = all(p["profile"].get("window_complete") for p in found.ranks.values())
    st = status(returncode, complete, options)
    recs = {r: msgspec.structs.replace(rec, status=st, exit_code=returncode) for r, rec in recs.items()}
    multi = len(recs) > 1 or recs[first].world_size > 1
    traced = complete and bool(recs) and all(r in found.traces for r in recs)
    traces = None
    if traced:
        if multi:
            (stage / "traces").mkdir()
            for r in recs:
                _with_host_stacks(found.traces[r], stage / "traces" / f"rank{r}.json.gz")
            traces = "traces"
        else:
            _with_host_stacks(found.traces[first], stage / "trace.json.gz")
            traces = "trace.json.gz"
    rec = recs[first]
    if multi:
        rec = msgspec.structs.replace(rec, distributed=job_view(recs))
        for r, one in recs.items():
            atomic.write_text(stage / "ranks" / f"rank{r}.json", one.to_json())
    analysis = None
    if traces is not None:
        with _threads(rec.environment.get("cpu_threads")):
            analysis = analyze_profile(stage, rec)
    rec = with_coverage(with_findings(rec, analysis), analysis)
    atomic.write_text(stage / "run.json", rec.to_json())
    note = write_report(stage, out) if write_report is not None else None
    from trainprof.diagnose.engine import principal

    return Written(out, rec, analysis, traces, note,
                   principal(rec.findings, analysis.ranks[0] if analysis else None, rec))


def with_coverage(rec: RunRecord, analysis: Analysis | None) -> RunRecord:
    """flops.coverage: the share of the profiled operator time whose FLOPs were counted, the
    largest uncovered operators, and a warning when maths with no formula holds a real share
    (analysis/run/flop_coverage.py)."""
    per_op = (rec.flops or {}).get("per_op_per_step")
    if analysis is None or not per_op or not analysis.ranks:
        return rec
    from trainprof.analysis.run.flop_coverage import flop_coverage

    cov = flop_coverage([k for k, v in per_op.items() if v], analysis.ranks[0].top_ops or [])
    if cov is None:
        return rec
    warnings = [*rec.warnings, cov.warning] if cov.warning else rec.warnings
    return msgspec.structs.replace(rec, flops={**rec.flops, "coverage": msgspec.to_builtins(cov)}, warnings=warnings)


def job_view(recs: dict[int, RunRecord]) -> Distributed:
    """run.json's "distributed" for the job, from every rank's record (the keys `run --nproc`
    writes: its ranks run in lockstep, so the job runs at its slowest rank's pace)."""
    from trainprof.analysis.run.throughput import straggler

    first = recs[min(recs)]
    rows = [RankRow(rank=r, step_time_s=x.summary.step_time_s, step_time_median_s=x.summary.step_time_median_s,
                    forward_s=x.summary.forward_s, backward_s=x.summary.backward_s,
                    optimizer_s=x.summary.optimizer_s, data_s=x.summary.data_s) for r, x in sorted(recs.items())]
    slow, excess = straggler({row.rank: row.step_time_s for row in rows})
    wrapper = (first.model or {}).get("wrapper") or ""
    strategy = {"DistributedDataParallel": "ddp", "FullyShardedDataParallel": "fsdp"}.get(wrapper, "user's")
    world = first.world_size
    return Distributed(world_size=world, strategy=strategy,
                       backend=(first.profile.value("process_group_backend") if first.profile else None) or "none",
                       global_batch_tokens=first.summary.tokens_per_step * world,
                       job_tokens_per_s=first.summary.tokens_per_s * world, per_rank=rows,
                       ranks_recorded=len(recs), straggler_rank=slow, straggler_excess_pct=excess)


class _threads:
    """torch's intra-op threads set to the program's while the trace is analysed: on CPU the
    roofline's measured peaks are cached per thread count, and the agent measured them with
    the program's (inject/window.py), so the analysis reads those instead of measuring again
    while the program is still running."""

    def __init__(self, n: int | None) -> None:
        self.n, self.old = n, None

    def __enter__(self) -> None:
        if self.n:
            import torch

            self.old = torch.get_num_threads()
            torch.set_num_threads(int(self.n))

    def __exit__(self, *exc: object) -> None:
        if self.old is not None:
            import torch

            torch.set_num_threads(self.old)


def finalize(w: Written, returncode: int, options: ProfileOptions, *,
             write_report: Callable[[Path, Path], str | None] | None = None) -> Written:
    """The program has ended after its window: its status and exit code into the records
    (the folder is in place by now: what is written there joins its manifest, owned.py)."""
    from trainprof import owned

    complete = bool(w.record.profile and w.record.profile.window_complete)
    st = status(returncode, complete, options)
    rec = msgspec.structs.replace(w.record, status=st, exit_code=returncode)
    with owned.tracking(w.out):
        for f in sorted((w.out / "ranks").glob("rank*.json")):
            one = _load(f)
            if one is None:
                continue  # a rank's file that is gone or broken: run.json is still written
            try:
                one = run_from_dict(one)
            except ValueError:
                continue
            atomic.write_text(f, msgspec.structs.replace(one, status=st, exit_code=returncode).to_json())
        atomic.write_text(w.out / "run.json", rec.to_json())
        note = write_report(w.out, w.out) if write_report is not None else w.report_note
    return dataclasses.replace(w, record=rec, report_note=note)


def partial_note(w: Written, options: ProfileOptions) -> str | None:
    """What is missing when the program ended before its window completed, or None."""
    p = w.record.profile or Profile()
    if p.window_complete:
        return None
    n = w.record.summary.measured_steps
    return (f"the program ended ({w.record.status}, exit code {w.record.exit_code}) after {p.steps_seen} "
            f"steps, before the window completed: {n} of {options.steps} steps measured"
            + (", no trace recorded" if options.monitor.profile_steps else "")
            + "; records of what was measured are kept")


def ending(rc: int | None) -> str | None:
    """How the program ended, when not by itself with exit code 0: "was interrupted (SIGINT)",
    "was killed by SIGTERM", "exited with code 3"; None for 0 or still running."""
    if rc is None or rc == 0:
        return None
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return "was interrupted (SIGINT)" if name == "SIGINT" else f"was killed by {name}"
    return "was interrupted (exit code 130, SIGINT)" if rc == 130 else f"exited with code {rc}"


def explain(found: Parts, options: ProfileOptions, rc: int | None = 0) -> str:
    """Why nothing was measured, and what to do about it. A program that was interrupted,
    killed or failed is told so first: advice to run it longer would be wrong."""
    W, stopped = options.warmup, ending(rc)
    if found.ranks:
        p = found.ranks[min(found.ranks)]["profile"]
        if p.get("error"):
            return f"trainprof's agent failed inside the program: {p['error']}"
        made = f"{p.get('steps_seen')} steps (one step = {p.get('boundary')})"
        if stopped:
            return (f"the program {stopped} after {made}, before the first measured step ({W}) ended: nothing was "
                    "measured")
        if p.get("warnings") and p.get("steps_seen", 0) >= W:  # it reached the measured steps: a device we cannot time
            return "nothing measured: " + "; ".join(p["warnings"])
        return (f"the program made {made} and ended before the "
                f"first measured one, step {W}: run it for more steps, or lower --warmup (at least 2)")
    errors = [d["error"] for d in found.procs if d.get("error")]
    if errors:
        return f"trainprof's agent failed inside the program: {errors[0]}"
    if found.claimed:
        how = stopped or "ended (exit code 0)"
        return (f"the program {how} inside the profiled window without running its exit handlers (a signal it does "
                "not handle, or os._exit): the steps it made were measured but never written, nothing was kept")
    trained = [d for d in found.procs if d.get("backward_passes")]
    if trained:
        d = max(trained, key=lambda d: d["backward_passes"])
        if stopped:
            return (f"the program {stopped} after {d['backward_passes']} backward passes, before its first step "
                    f"boundary: nothing was measured")
        if options.step_marker and d.get("marker_found") is False:
            mod, _, qual = options.step_marker.partition(":")
            return (f"--step-marker {options.step_marker}: the program never defined it (no module {mod} was imported "
                    f"with a function {qual}; for the script itself, use its file name without .py)")
        if options.step_marker:
            return (f"--step-marker {options.step_marker} never returned in the program "
                    f"({d['backward_passes']} backward passes): no step was counted")
        steps = sum((d.get("optimizer_steps") or {}).values())
        return (f"the program never called optimizer.step() ({d['backward_passes']} backward passes, {steps} optimizer "
                "steps): trainprof found no step boundary. If it updates its parameters another way, name the function "
                "that runs one training step: --step-marker MODULE:FUNCTION (e.g. train:train_step)")
    if stopped:
        return f"the program {stopped} before it trained (no backward pass): nothing was measured"
    if found.procs:
        return ("the program never trained: trainprof ran in it, but saw no backward pass and no optimizer step "
                "(a launcher whose training process is not Python, or one that clears PYTHONPATH?)")
    return ("trainprof was not loaded into the program: it is not a Python program, or its Python ignores PYTHONPATH "
            "and site (-E, -I, -S), or it was killed before it could report")
