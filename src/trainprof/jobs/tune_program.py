"""`trainprof tune [options] -- COMMAND`: the optimisation ladder on the user's unchanged program.

Each trial is a fresh `trainprof profile --stop-after` of COMMAND (jobs/trial.run_command: its
own process group, dying with the tuner, its output kept out of the terminal): a short window
(`--warmup`, `--steps`, no trace, no sampler), the trial's knobs carried to the agent in its
options (inject/options.Knobs, applied by inject/knobs.py), the program's flags rewritten and
its environment set for --arg-knob/--env-knob (tune/program.py). The ladder, journal, verify
pairs and budget are `trainprof tune --preset`'s (tune/ladder.py); the guard compares the
program's own loss (tune/guard.ProgramGuard); tune.json adds `program` with the patches that
make the kept knobs permanent (tune/patches.py).

The baseline runs first, alone: what its profile found (a DataLoader? which optimizer? which
device?) decides which knobs apply, and each that does not is skipped with the reason.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from trainprof import atomic, jsontext, owned
from trainprof.errors import UsageError
from trainprof.recordtypes.run_parts import Profile
from trainprof.tune.ladder import LadderResult, TrialResult
from trainprof.tune.program import Facts, ProgramConfig, rewrite, shown

if TYPE_CHECKING:
    from trainprof.jobs.tune_config import TuneJob  # its own module: jobs/tune.py is not imported back
    from trainprof.jobs.tune_folder import TuneResult

TRIAL_TIMEOUT_S = 900.0  # as jobs/tune.py: far above a short window, room for torch.compile
KILL_GRACE_S = 10.0  # a trial still running this long after the deadline is killed (cut short)
PROGRAM_JSON = "program.json"  # the command and its trial settings, checked by --resume
EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*")


# ---- one trial -------------------------------------------------------------------------------
def trial_argv(folder: Path, cfg: ProgramConfig, argv: list[str], warmup: int, steps: int,
               peak_tflops: float | None, marker: str | None = None) -> list[str]:
    """`trainprof profile` of one trial: no trace, no sampler, no report; stops after the window."""
    knobs = cfg.knobs.set()
    return [sys.executable, "-m", "trainprof", "profile", "--warmup", str(warmup), "--steps", str(steps),
            "--profile-steps", "0", "--system-interval", "0", "--stop-after", "--no-report", "--rows", "1",
            "--out", str(folder / "run"),
            *(["--peak-tflops", repr(peak_tflops)] if peak_tflops else []),
            *(["--agent-knobs", json.dumps(knobs)] if knobs else []),
            *(["--step-marker", marker] if marker else []),
            "--", *rewrite(argv, cfg.args)]


def run_program_trial(cfg: ProgramConfig, *, argv: list[str], warmup: int, steps: int, workdir: Path,
                      facts: Facts | None = None, stop_at: float | None = None,
                      timeout_s: float = TRIAL_TIMEOUT_S, marker: str | None = None) -> TrialResult:
    """One trial in a fresh process; `facts` (the baseline's) lend their CPU peak to trials
    of the same dtype and threads, so each does not measure it again (~2-3 s a trial)."""
    import os

    from trainprof.jobs.trial import run_command
    from trainprof.recordtypes.run import load_run

    if stop_at is not None:
        timeout_s = max(1.0, min(timeout_s, stop_at + KILL_GRACE_S - time.time()))
    peak = facts.peak_tflops if facts is not None and facts.device == "cpu" and cfg.knobs.autocast is None \
        and cfg.knobs.threads is None else None
    env = {**os.environ, **dict(cfg.env)}
    drain = queue(cfg, facts)

    def read(folder: Path) -> Any:
        path = folder / "run" / "run.json"
        return load_run(path) if path.exists() else None

    out = run_command(lambda folder: trial_argv(folder, cfg, argv, warmup, steps + drain, peak, marker), read,
                      timeout_s=timeout_s, workdir=workdir, env=env)
    if out.status == "timeout":
        if stop_at is not None and time.time() >= stop_at:
            return TrialResult(ok=False, cut_short=True, reason="time budget spent: still running at the deadline, "
                                                                "killed")
        return TrialResult(ok=False, reason=f"the program {out.reason}")
    if out.status != "ok" or out.record is None:
        return TrialResult(ok=False, reason=failure(out.stderr, out.returncode))
    return program_result(out.record, warmup + steps + drain, drain)


def queue(cfg: ProgramConfig, facts: Facts | None) -> int:
    """Q = num_workers × prefetch_factor: the batches a DataLoader's workers hold ready. They
    fill that queue while the program sets up and the warm-up runs, so a trial's first Q
    measured steps find their batch waiting (measured: 2 workers on a 20 ms-per-batch loader,
    4 measured steps read 1.5 ms a step where the steady state is 10 ms). A trial measures Q
    steps more and leaves them out of its speed (`program_result`); the loss comparison keeps
    its steps (the first --steps of every trial are the same step numbers)."""
    loader = (facts.loader if facts is not None else None) or {}
    workers = cfg.knobs.num_workers if cfg.knobs.num_workers is not None else int(loader.get("num_workers") or 0)
    prefetch = cfg.knobs.prefetch_factor or loader.get("prefetch_factor") or 2
    return workers * prefetch


def failure(stderr: str, code: int | None) -> str:
    """One line: the program's exception (the last `XxxError: ...` line), else trainprof's own
    message (`trainprof: the program never called optimizer.step() ...`), else the exit code."""
    lines = [x.strip() for x in (stderr or "").splitlines() if x.strip()]
    ours = [x for x in lines if x.startswith("trainprof: ")]
    exc = [x for x in lines if EXCEPTION.match(x)]
    if exc:
        return f"the program failed (exit code {code}): {exc[-1][:240]}"
    if ours:
        return ours[-1].removeprefix("trainprof: ")[:300]
    return f"the program exited with code {code}" if code else "the program measured nothing"


def program_result(run: Any, needed: int, drain: int = 0) -> TrialResult:
    """What the ladder reads from a trial's run.json: the program's losses per measured step,
    its throughput (tokens or samples per second: per item, so batch sizes compare), MFU,
    memory, compilation time. Throughput is the items of the measured steps after the first
    `drain` (`queue`) over their total time: the mean step, not the median, because with
    DataLoader workers the steps alternate between a batch found ready and a wait for one
    (measured: 0.7, 20, 0.7, 20 ms with 2 workers), and a median picks one of the two."""
    p = run.profile or Profile()
    s = run.summary
    if not p.window_complete:
        return TrialResult(ok=False, reason=f"the program ended after {p.steps_seen or 0} steps, before the "
                           f"trial's window ended (it needs {needed + 1}: --warmup + --steps + 1)")
    steady = run.steps[drain:] or run.steps
    total = sum(x.step_time_s for x in steady)
    mean_step = total / len(steady)
    items = s.tokens_per_step or 0
    report = p.knobs
    missing = _not_applied(report)
    facts = Facts.of(run)
    warm = (report or {}).get("warmup_step_s") or []
    compile_s = sum(max(0.0, t - mean_step) for t in warm[:-1])  # the last warm-up step is FLOP-counted: not compile
    notes = {"facts": facts.to_dict(), "tokens_per_step": items, "knobs": report,
             "memory_by_phase": p.value("memory_by_phase")}
    done = sum(x.tokens for x in steady) if items else len(steady)  # no batch counted: steps per second
    if missing:
        return TrialResult(ok=False, reason=f"not applied: {missing}", notes=notes)
    return TrialResult(ok=True, losses=[x.loss for x in run.steps], val_loss=None,
                       tokens_per_s=done / total if total > 0 else 0.0,
                       step_time_s=mean_step, mfu=s.mfu,  # MFU: the profile's, of its median step
                       peak_memory_bytes=s.peak_memory_bytes, compile_s=compile_s, notes=notes)


def _not_applied(report: dict | None) -> str | None:
    """Why a knob asked for touched nothing in the program (a knob that touched something,
    somewhere, is applied)."""
    if not report:
        return None
    done = {a.get("knob") for a in report.get("applied", [])}
    why = [f"{k}: {v}" for k, v in (report.get("not_applied") or {}).items() if k not in done]
    return "; ".join(why) or None


# ---- the job ---------------------------------------------------------------------------------
def execute(job: "TuneJob", on_trial: Callable[[dict], None] | None = None,
            on_begin: Callable[[str], None] | None = None) -> "TuneResult":
    """Prepare the folder (or resume it), run the baseline, climb the program's ladder, write
    tune.json, tune.png and the reports."""
    from trainprof.jobs.profile import command_line
    from trainprof.jobs.tune_folder import TuneResult, check_out, prepare
    from trainprof.report.files import auto_report

    check_out(job)
    argv = command_line(job.argv, 1)  # a .py that is not executable runs with this Python, as in profile
    out = prepare(job)
    with owned.tracking(out):
        _same_program(out, job, argv)
        doc, chart = climb_program(job, argv, out, on_trial=on_trial, on_begin=on_begin)
        note = auto_report(out, enabled=job.output.report)
    return TuneResult(out, doc, chart, note)


def _settings(job: "TuneJob", argv: list[str]) -> dict[str, Any]:
    return {"command": argv, "warmup": job.program.warmup, "steps": job.train.steps,
            "arg_knob": list(job.program.arg_knob), "env_knob": list(job.program.env_knob),
            **({"step_marker": job.program.step_marker} if job.program.step_marker else {})}


def _same_program(out: Path, job: "TuneJob", argv: list[str]) -> None:
    """program.json: what the journal's trials ran; --resume refuses another command or window
    (their trials would be taken for this one's)."""
    path, now = out / PROGRAM_JSON, _settings(job, argv)
    if job.output.resume and path.exists():
        from trainprof.bounded import load_object

        before = load_object(path)  # bounded; one line if a user edited it into something else (#45)
        diff = [k for k in now if before.get(k) != now[k]]
        if diff and not job.output.resume_anyway:
            raise UsageError(f"--resume: {', '.join(diff)} differ from the tune in {out} ({path.name}); give the same "
                             "command and options, or --resume-anyway")
    atomic.write_text(path, jsontext.dumps(now) + "\n")


def climb_program(job: "TuneJob", argv: list[str], folder: Path, *, on_trial: Callable[[dict], None] | None = None,
                  on_begin: Callable[[str], None] | None = None, runner: Callable[..., TrialResult] | None = None,
                  clock: Callable[[], float] = time.time, deadline: float | None = None) -> tuple[Any, Path | None]:
    """The baseline first (its facts choose the knobs), then tune/ladder.run_ladder with the
    program's configurations and guard; tune.json and tune.png in `folder`. `deadline`: the
    ladder's (a study's tune stage gives its own); default now + the job's budget less what
    the journal's trials took."""
    from trainprof.jobs.tune_folder import LadderFailed
    from trainprof.report.tune_terminal import write_chart
    from trainprof.tune.guard import ProgramGuard
    from trainprof.tune.journal import Journal
    from trainprof.tune.ladder import entry_fields, run_ladder, trial_id
    from trainprof.tune.ladder_config import LadderConfig
    from trainprof.tune.program import again, program_knobs, user_knobs

    W, N = job.program.warmup, job.train.steps
    journal = Journal(folder / "journal.jsonl")
    if deadline is None:
        deadline = clock() + 60 * job.budget_minutes - sum(e.get("wall_s", 0.0) for e in journal.entries.values())
    base = ProgramConfig()
    tid = trial_id(0, "baseline", shown(base))
    first = journal.get(tid)
    if first is None:  # the ladder would run it first anyway; run here, its facts choose the knobs
        if on_begin:
            on_begin("baseline")
        t0 = clock()
        r = (runner or _runner(argv, W, N, folder, None, job.program.step_marker))(base)  # the first baseline always runs, as in the ladder
        first = {"trial_id": tid, "knob": "baseline", "config": shown(base), **entry_fields(r), "wall_s": clock() - t0}
        if not r.ok:
            raise UsageError(f"tune: the baseline failed: {r.reason}")
        journal.append(first)
    facts = Facts(**{**first["notes"]["facts"], "roots": tuple(first["notes"]["facts"]["roots"])})
    knobs = user_knobs(argv, job.program.arg_knob, job.program.env_knob) \
        + program_knobs(facts, job.tune.program_names())
    config = LadderConfig.of(job.tune, device=facts.device, guard=ProgramGuard(), deadline=deadline, clock=clock,
                             shown=shown, rerun=again, on_trial=on_trial, on_begin=on_begin)
    result = run_ladder(runner or _runner(argv, W, N, folder, facts, job.program.step_marker), knobs, base, config,
                        journal)
    if result.error:
        raise LadderFailed(result.error)
    doc = program_document(result, argv, W, N, facts)
    atomic.write_text(folder / "tune.json", jsontext.dumps(doc) + "\n")
    return doc, write_chart(doc, folder)


def _runner(argv: list[str], warmup: int, steps: int, folder: Path, facts: Facts | None,
            marker: str | None = None) -> Callable[..., TrialResult]:
    def run(cfg: ProgramConfig, stop_at: float | None = None) -> TrialResult:
        return run_program_trial(cfg, argv=argv, warmup=warmup, steps=steps, workdir=folder, facts=facts,
                                 stop_at=stop_at, marker=marker)
    return run


def program_document(result: LadderResult, argv: list[str], warmup: int, steps: int, facts: Facts) -> Any:
    """tune.json of a program's ladder: the reference workload's record, commands that run the
    program, each trial's patch, and `program` with the kept knobs' patches."""
    import dataclasses

    from msgspec import structs

    from trainprof.jobs.profile_records import redact
    from trainprof.recordtypes.base import known, or_default
    from trainprof.recordtypes.tune import Applied, ProgramTuneBlock
    from trainprof.tune.patches import patch
    from trainprof.tune.program import command_line, from_shown
    from trainprof.tune.record import tune_document

    trials = [structs.replace(t, patch=patch(t.knob, t.config, or_default(t.notes, None), argv))
              if not t.skipped and known(t.config) else t for t in result.trials]
    result = dataclasses.replace(result, trials=trials)
    confirmed = result.best_config != shown(ProgramConfig())  # else the verify pairs kept none
    apply = [Applied(knob=t.knob, patch=t.patch, speedup=t.step_gain)
             for t in result.trials if t.accepted and confirmed]
    program = ProgramTuneBlock(command=redact(argv), warmup=warmup, steps=steps, unit=facts.unit,
                               baseline_data_s=facts.data_s, facts=facts.to_dict(), apply=apply)
    cmd = lambda c: command_line(redact(argv), from_shown(c))  # noqa: E731
    return tune_document(shown(ProgramConfig()), result, command=cmd, program=program)
