"""`trainprof study [options] -- COMMAND`: the assignment on the user's unchanged program.

The stages, the budget, the journal and `--resume` are jobs/study.py's; only what a stage runs
differs (docs/study.md, "Program mode"):

    baseline   `trainprof profile --warmup W --steps N --profile-steps P --stop-after` of the
               program: baseline/{run,analysis}.json, trace.json.gz; the top-5 operators on the
               roofline and the Nsight Compute command for their kernels, with the program itself
    tune       `tune -- COMMAND`'s ladder (jobs/tune_program.climb_program) with its guard on the
               program's own loss, inside the study's deadline: tune/{tune.json, journal.jsonl}
    optimised  the same profile with the kept knobs applied (the agent's knobs, `--arg-knob`
               values rewriting argv, `--env-knob` variables): optimised/
    diff       the two run folders compared (jobs/diff.diff_inputs: the noise-aware verdict on
               their measured steps, and the traces per operator): diff.json, diff.md
    report     report.md / report.html from the same templates, the program's command in place of
               a preset and the tune's "apply these to your code" list

What has no meaning for a program is said, not faked: there is no validation loss of ours (the
guard compares the program's training loss, step by step, on the same steps); a profile runs
the program's own loop, so it cannot stop at a step boundary at the deadline (no `--stop-at`):
it is killed there and the stage recorded as skipped.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from trainprof import atomic
from trainprof.jobs.study import KILL_GRACE_S, OutOfTime, Study, StudyError, machine_of
from trainprof.jobs.study_budget import REPORT_S, trial_estimate_s
from trainprof.jobs.study_config import StudyConfig
from trainprof.recordtypes.run import RunRecord, load_run
from trainprof.recordtypes.tune import Tune


@dataclass
class ProgramStudy(Study):
    """A study folder whose stages run the user's command (`cfg.argv`)."""

    @property
    def argv(self) -> list[str]:
        from trainprof.jobs.profile import command_line

        return command_line(self.cfg.argv, 1)  # a .py that is not executable runs with this Python

    def window(self) -> int:
        """Steps the program must run for a profile: warm-up, measured, 2 profiler start-up, profiled."""
        return self.cfg.program.warmup + self.cfg.train.steps + 2 + self.cfg.profile_steps

    # -- budget: the profiles are killed at their deadline, never stopped early ----------------
    def estimate_s(self, stage: str) -> float | None:
        b = self.done.get("baseline")
        if stage == "optimised" and b is not None:
            return float(b["wall_s"])  # the same window of the same program
        if stage == "tune" and b is not None:
            return 3 * trial_estimate_s(b, self.cfg.tune_steps, self.cfg.profile_steps)
        return super().estimate_s(stage)

    # -- a profile of the program ---------------------------------------------------------------
    def _profiled_run(self, stage: str, cfg: Any, stop_at: float, kill_at: float, drain: int = 0) -> RunRecord:
        """`trainprof profile` of the program with `cfg` (a ProgramConfig) into OUT/stage, which
        appears only when complete; killed at `kill_at` (OutOfTime). Its output (the program's
        own lines included) goes to logs/STAGE.log."""
        import shutil

        from trainprof.controls import shell_join
        from trainprof.jobs.trial import run_command
        from trainprof.tune.program import rewrite

        dest = self.out / stage
        shutil.rmtree(dest, ignore_errors=True)  # a stage not in the journal did not finish: redo it whole
        if self.launch is not None:
            return self.launch(self, stage, cfg, stop_at, kill_at)

        def argv(folder: Path) -> list[str]:
            return [sys.executable, "-m", "trainprof", *self.profile_args(cfg, drain), "--out", str(folder / stage),
                    "--", *rewrite(self.argv, cfg.args)]

        p = run_command(argv, lambda folder: (folder / stage).rename(dest), workdir=self.out,
                        timeout_s=max(1.0, kill_at - self.budget.clock()), env={**os.environ, **dict(cfg.env)})
        logs = self.out / "logs"
        logs.mkdir(exist_ok=True)
        shown = shell_join(["trainprof", *self.profile_args(cfg, drain), "--", *rewrite(self.argv, cfg.args)])
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in cfg.env)
        atomic.write_text(logs / f"{stage}.log", f"$ {env + ' ' if env else ''}{shown}\n" + p.stdout + p.stderr)
        if p.status == "timeout":
            raise OutOfTime(f"`trainprof profile` of the program still running at the deadline, killed (a program's "
                            f"loop cannot be stopped at a step boundary); see {logs / (stage + '.log')}")
        if p.status != "ok" or not (dest / "run.json").is_file():
            from trainprof.jobs.tune_program import failure

            raise StudyError(f"study {stage}: `trainprof profile` of the program failed "
                             f"({failure(p.stderr, p.returncode) if p.status != 'ok' else 'no run.json'}); see "
                             f"{logs / (stage + '.log')}, then `trainprof study --resume --out {self.out}`")
        run = load_run(dest / "run.json")
        if not (run.profile and run.profile.window_complete):
            shutil.rmtree(dest, ignore_errors=True)
            raise StudyError(f"study {stage}: the program ended after {(run.profile and run.profile.steps_seen) or 0} "
                             f"steps, before the profile's window ({self.window() + drain} steps: --warmup "
                             f"{self.cfg.program.warmup + drain}, --steps {self.cfg.train.steps}, 2 profiler start-up, "
                             f"--profile-steps {self.cfg.profile_steps}); give the program more steps or lower --steps")
        return run

    def profile_args(self, cfg: Any, drain: int = 0) -> list[str]:
        """`trainprof profile`'s options for a study's profile (after `trainprof`); `drain`: warm-up
        steps more (the batches the knobs' DataLoader workers hold ready, `extra_queue`)."""
        knobs = cfg.knobs.set()
        return ["profile", "--warmup", str(self.cfg.program.warmup + drain), "--steps", str(self.cfg.train.steps),
                "--profile-steps", str(self.cfg.profile_steps), "--stop-after", "--no-report",
                *(["--agent-knobs", json.dumps(knobs)] if knobs else []),
                *(["--step-marker", self.cfg.program.step_marker] if self.cfg.program.step_marker else [])]

    # -- stages ---------------------------------------------------------------------------------
    def _baseline(self) -> dict:
        from trainprof.recordtypes.analysis import Analysis
        from trainprof.recordtypes.base import load
        from trainprof.tune.program import ProgramConfig

        run = self._profiled_run("baseline", ProgramConfig(), 0.0, self.budget.deadline - REPORT_S)
        s = run.summary
        path = self.out / "baseline" / "analysis.json"
        rank = load(path, Analysis).ranks[0] if path.is_file() else None
        return {"config": {}, "step_time_median_s": s.step_time_median_s, "val_loss": None,
                "steps_run": len(run.steps), **({"ncu": program_ncu_plan(rank, self.argv)} if rank else {}),
                "machine": machine_of(run)}

    def _tune(self) -> dict:
        from trainprof.jobs.tune_config import TuneJob
        from trainprof.jobs.tune_folder import LadderFailed
        from trainprof.jobs.tune_program import climb_program
        from trainprof.options import OutputOptions

        folder = self.out / "tune"
        folder.mkdir(exist_ok=True)
        job = TuneJob(train=replace(TuneJob.__dataclass_fields__["train"].default, steps=self.cfg.tune_steps),
                      tune=self.cfg.tune, program=self.cfg.program, command=tuple(self.cfg.argv),
                      output=OutputOptions(out=str(folder)))
        deadline = self.budget.deadline - self.reserve_after_s("tune")
        begin, finished = self.trial_events(2 + job.rungs() + 2 * self.cfg.tune.verify_trials, deadline)

        try:
            doc, _ = climb_program(job, self.argv, folder, on_trial=finished, on_begin=begin, clock=self.budget.clock,
                                   runner=self.trial_runner, deadline=deadline)
        except LadderFailed as e:
            raise StudyError(f"study tune: {e}") from None
        from trainprof.recordtypes.base import load

        from trainprof.jobs.study import tune_outcome

        return tune_outcome(load(folder / "tune.json", Tune))

    def _optimised(self) -> dict:
        from trainprof.controls import shell_join
        from trainprof.jobs.profile_records import redact
        from trainprof.jobs.study import optimised_choice
        from trainprof.recordtypes.base import load
        from trainprof.tune.program import from_shown, rewrite

        tune = load(self.out / "tune" / "tune.json", Tune)
        choice = optimised_choice(tune)
        cfg = from_shown(choice["config"])
        drain = extra_queue(self.out / "tune" / "tune.json", cfg)
        end = self.budget.deadline - self.reserve_after_s("optimised")
        run = self._profiled_run("optimised", cfg, end, end + KILL_GRACE_S)
        base = load_run(self.out / "baseline" / "run.json")
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in cfg.env)
        command = (env + " " if env else "") + shell_join(["trainprof", *self.profile_args(cfg), "--",
                                                           *redact(rewrite(self.argv, cfg.args))])
        choice = {**choice, "command": command, **({"queued_batches": drain} if drain else {})}
        return {"choice": choice, "step_time_median_s": run.summary.step_time_median_s, "val_loss": None,
                "steps_run": len(run.steps), "accuracy": program_accuracy(tune, base, run, choice["knobs"])}

    def _diff(self) -> dict:
        from trainprof.jobs.diff import diff_inputs, resolve, write_diff
        from trainprof.jobs.study import UNLIKE
        from trainprof.jobs.study_verdicts import speedup
        from trainprof.options import TopK
        from trainprof.recordtypes.analysis import Analysis
        from trainprof.recordtypes.base import load

        sides = [self.out / s for s in ("baseline", "optimised")]
        doc = diff_inputs(resolve(str(sides[0])), resolve(str(sides[1])), TopK.k)
        runs = [load_run(s / "run.json") for s in sides]
        ranks = [load(s / "analysis.json", Analysis).ranks[0] for s in sides]
        tune = load(self.out / "tune" / "tune.json", Tune)
        sp = speedup(tune, self.done["optimised"]["choice"], runs, ranks, doc)
        write_diff(self.out, doc, None if sp["equal_tokens_per_step"] else UNLIKE)
        v = doc.verdict
        return {"speedup": sp, **({"verdict": v.call, "verdict_ratio": v.ratio} if v is not None else {})}

    def _report(self) -> dict:
        write_program_extras(self.out)
        from trainprof.report.files import write_reports

        self.running["spent_before_s"] = round(self.budget.spent_s(), 3)
        self.write_index()
        written = write_reports(self.out)
        return {"files": [p.name for p in written], "spent_before_s": self.running["spent_before_s"]}


def extra_queue(tune_json: Path, cfg: Any) -> int:
    """The batches the optimised configuration's DataLoader workers hold ready beyond the
    baseline's (jobs/tune_program.queue: Q = workers × prefetch). They refill during the
    profile's warm-up (its FLOP-counted step is slow; a longer warm-up does not help, measured),
    so the first Q measured steps find their batch waiting (slow_data.py: 1.1-2.4 ms for 4 steps,
    then 17 and 2 ms alternating, against 22 ms): the profile's median step and the diff's ratio
    overstate the steady state. The tune's trials leave those steps out of their speed, so its
    verify pairs stay the figure to quote; the report says so (choice.queued_batches)."""
    from trainprof.jobs.tune_program import queue
    from trainprof.tune.program import Facts, ProgramConfig

    from trainprof.bounded import load_object

    doc = load_object(tune_json)  # bounded, one line if it is not an object (#45)
    f = dict((doc.get("program") or {}).get("facts") or {})
    if not f:
        return 0
    facts = Facts(**{**f, "roots": tuple(f.get("roots") or ())})
    return max(0, queue(cfg, facts) - queue(ProgramConfig(), facts))


def program_ncu_plan(rank: Any, argv: list[str]) -> dict:
    """The Nsight Compute commands for the baseline's top kernels, with the program itself (its
    kernels are ours to name, its command is the user's). A CPU trace has no kernels: then the
    command profiles the program's first kernels on a GPU, and says why."""
    import msgspec

    from trainprof.analysis.cost.ncu import METRICS, SECTIONS, ncu_command
    from trainprof.controls import shell_join
    from trainprof.jobs.ncu import NcuJob
    from trainprof.jobs.profile_records import redact
    from trainprof.recordtypes.base import or_default

    program = shell_join(redact(argv))
    kernels = [msgspec.to_builtins(k) for k in or_default(rank.top_kernels, [])
               if k.kind not in ("memcpy", "memset")][:NcuJob.top]
    if or_default(rank.has_gpu, False) and kernels:
        collect, export = ncu_command(kernels, or_default(rank.steps, 0) or 1, program, "study_ncu")
        return {"applies": True, "collect": collect, "export": export, "kernels": [k["name"] for k in kernels]}
    collect = ["ncu", "--target-processes", "all", "--launch-skip", "200", "--launch-count", "200"]
    for s in SECTIONS:
        collect += ["--section", s]
    collect += ["--metrics", ",".join(METRICS), "-o", "study_ncu", "--", *shlex.split(program)]
    return {"applies": False, "collect": shell_join(collect),
            "export": "ncu --import study_ncu.ncu-rep --csv --page raw --print-units base > study_ncu.csv",
            "reason": "this program ran on a CPU: Nsight Compute measures CUDA kernels only, so the roofline below "
                      "places operators by the FLOPs and bytes of their recorded shapes against this machine's "
                      "measured peaks; on a GPU, run the program under the command (200 kernels after the first "
                      "200, past start-up) and `trainprof analyze TRACE --ncu study_ncu.csv`"}


def program_accuracy(tune: Tune | None, base: RunRecord, new: RunRecord, knobs: list[str]) -> dict[str, Any]:
    """The tune's guard (tune/guard.ProgramGuard, its tolerance calibrated on the baseline run
    twice) on the two profiles' losses, step by step on the same steps. No validation loss: a
    program's held-out evaluation is its own."""
    import msgspec

    from trainprof.recordtypes.base import known, or_default
    from trainprof.tune.guard import Guard, ProgramGuard

    both = sorted({s.step for s in base.steps} & {s.step for s in new.steps})  # the steps both measured
    b = {"losses": [s.loss for s in base.steps if s.step in both]}
    n = {"losses": [s.loss for s in new.steps if s.step in both]}
    out: dict[str, Any] = {"val_base": None, "val_new": None, "val_delta": None}
    tol = tune.tolerance if tune else None
    if tol is None:
        return {**out, "verdict": None, "reason": "no accuracy guard: the tune stage did not run"}
    if not both:
        return {**out, "verdict": None, "reason": "not comparable: the two profiles measured no step in common "
                "(the optimised one's warm-up covered its DataLoader workers' queue); raise --steps"}
    by_knob = {t.knob: t for t in tune.trials}
    same_math = all(by_knob[k].same_math is True for k in knobs if k in by_knob and known(by_knob[k].same_math))
    tolerance = msgspec.structs.replace(tol, changed_tol=or_default(tol.changed_tol, tol.trajectory_tol),
                                        rule=or_default(tol.rule, "the tune's"))
    ok, why = ProgramGuard().check(n, b, tolerance, same_math)
    dev = Guard.measure({**n, "val_loss": None}, {**b, "val_loss": None})["loss_deviation"]
    return {**out, "verdict": "accepted" if ok else "rejected", "reason": why or "", "same_math": same_math,
            "trajectory_tol": tol.trajectory_tol, "loss_deviation": dev}


def write_program_extras(out: Path) -> None:
    """reproduce.sh (the two profiles, as run) and requirements.txt."""
    logs = [out / "logs" / f"{s}.log" for s in ("baseline", "optimised")]
    lines = ["#!/bin/sh", "# The study's two profiles of the program (trainprof study -- COMMAND), one line each.",
             "set -e"]
    for s, log in zip(("baseline", "optimised"), logs):
        if log.is_file():
            first = log.read_text("utf-8", errors="replace").splitlines()[0].removeprefix("$ ")
            words = first.split(" -- ", 1)
            lines.append(f"{words[0]} --out runs/{s} -- {words[1]}" if len(words) == 2 else first)
    atomic.write_text(out / "reproduce.sh", "\n".join(lines) + "\n")
    from trainprof import __version__

    env = {}
    if (out / "baseline" / "run.json").is_file():
        from trainprof.bounded import load_object

        env = load_object(out / "baseline" / "run.json").get("environment") or {}
        env = env if isinstance(env, dict) else {}
    torch_v = str(env.get("torch") or "").split("+")[0]
    req = [(f"# Python {env.get('python') or '>= 3.10'}; install trainprof from its repository (pip install .); "
            "your program's own requirements are its own"),
           f"torch=={torch_v}" if torch_v else "torch>=2.4", f"trainprof=={__version__}"]
    atomic.write_text(out / "requirements.txt", "\n".join(req) + "\n")


def start(out: Path, cfg: StudyConfig, **kw: Any) -> Study:
    """jobs/study.start, with a program's study for `-- COMMAND` (the journal's command on
    --resume), its command checked before anything is written (exit 2 when not found)."""
    from trainprof.jobs import study

    return study.start(out, cfg, kind=_kind, **kw)  # looked up at the call: tests replace it


def _kind(cfg: StudyConfig) -> type[Study]:
    if not cfg.argv:
        return Study
    from trainprof.jobs.profile import command_line

    command_line(cfg.argv, 1)
    return ProgramStudy
