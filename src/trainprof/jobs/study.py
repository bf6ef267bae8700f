"""`trainprof study`: the profiling assignment end to end, in one resumable folder.

    baseline   train the configuration (validation loss) and profile one iteration:
               baseline/{run,analysis}.json, trace.json.gz, roofline.png; the top-5 operators
               on the roofline and the Nsight Compute command for their kernels
    tune       the optimisation ladder with the accuracy guard, inside the budget:
               tune/{tune.json, journal.jsonl, tune.png}
    optimised  the chosen configuration trained and profiled the same way, for as many steps
               as the baseline ran: optimised/; the guard's verdict on its accuracy
    diff       baseline vs optimised profile, per iteration: diff.json, diff.md; the speed-up
               at equal work (tokens/s)
    report     report.md (the assignment's report, every number from these records) + report.html

The budget is one wall-clock deadline for every stage (jobs/study_budget.py): a stage that
cannot finish in what is left is skipped with that reason, one in progress ends at a step
boundary. `journal.jsonl` (append-only, fsync'd) records each stage's end (done, skipped,
failed) and the time spent; `--resume` continues after the last finished stage, the tune
from its own journal, after checking its configuration (jobs/study_resume.py). `study.json`
says which record holds what, so `trainprof report DIR` renders the same report.

The two profiled runs and every tune trial are fresh `trainprof run` processes: a process's
peak RSS cannot be reset (ru_maxrss), and torch.compile caches and allocator state would
leak from one configuration into the next; a fresh process also makes its command line the
exact reproduction.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import msgspec
from msgspec import UNSET

from trainprof import atomic, jsonl, jsontext, outdir
from trainprof.errors import TrainprofError
from trainprof.jobs.study_budget import (BASELINE_SHARE, DIFF_S, POST_RUN_S, REPORT_S, Budget, run_estimate_s,
                                         trial_estimate_s)
from trainprof.jobs.study_config import StudyConfig
from trainprof.jobs.tune import KILL_GRACE_S
from trainprof.recordtypes.run import RunRecord, load_run
from trainprof.recordtypes.study import Accuracy, Choice, Machine, NcuPlan, Speedup, Stage, StopCriterion
from trainprof.recordtypes.study import Study as StudyRecord
from trainprof.recordtypes.tune import Tune
from trainprof.report.formatting import duration

STAGES = ("baseline", "tune", "optimised", "diff", "report")
NEEDS = {"tune": "baseline", "optimised": "tune", "diff": "optimised"}  # the stage whose output each reads
HEARTBEAT_S = 30.0  # a progress event (and a journaled clock) this often while a stage runs
UNLIKE = "the two steps hold different numbers of tokens: compare them per token (report.md, section 5)"


def machine_of(run: RunRecord) -> dict[str, Any]:
    """study.json's `baseline.machine` (recordtypes/study.Machine): cores and the sampled load,
    as plain JSON for the journal."""
    s = run.system_summary
    return {"cpu_count": run.environment.get("cpu_count"),
            **{k: msgspec.to_builtins(getattr(s, k)) if s is not None else None
               for k in ("cpu_util_pct", "others_cpu_pct", "load_avg_1m")}}


class StudyError(TrainprofError):
    """A stage failed; the journal keeps what finished, `--resume` continues."""

    exit_code = 1


class OutOfTime(Exception):
    """A stage still running at its deadline was stopped: recorded as skipped, the study goes on."""


def _quiet(kind: str, info: dict) -> None:
    pass


@dataclass
class Study:
    """One study folder: its journal, its budget and what each stage measured."""

    out: Path
    cfg: StudyConfig
    budget: Budget
    on_event: Callable[[str, dict], None] = _quiet
    launch: Callable[..., RunRecord] | None = None
    """launch(study, stage, run config, stop_at, kill_at) -> its run.json: a profiled run into OUT/stage
    that ends its steps by stop_at and is killed at kill_at (raising OutOfTime); default a
    `trainprof run` process; tests inject one"""
    trial_runner: Callable[..., Any] | None = None
    """the tune's trials, runner(config, stop_at=T) (default: jobs/tune.run_trial in a fresh process)"""
    heartbeat_s: float = HEARTBEAT_S
    done: dict[str, dict] = field(default_factory=dict)  # stage → its `done` journal entry
    status: dict[str, dict] = field(default_factory=dict)  # stage → its last entry (done, skipped, failed)
    changes: list[str] = field(default_factory=list)  # configuration changes --resume-anyway accepted
    running: dict[str, Any] = field(default_factory=dict)  # the stage running now and its detail

    @property
    def journal(self) -> Path:
        return self.out / "journal.jsonl"

    # -- journal ------------------------------------------------------------------------------
    def load(self) -> None:
        from trainprof.jobs import study_journal

        for e in study_journal.read(self.journal):
            st = e.get("stage")
            if st in STAGES and e.get("status") in ("done", "skipped", "failed"):
                self.status[st] = e
                if e["status"] == "done":
                    self.done[st] = e
                else:
                    self.done.pop(st, None)
            elif st == "plan" and e.get("changes"):
                self.changes += e["changes"]

    def append(self, entry: dict) -> dict:
        """Journal `entry` with the time this session has spent so far (what a resume counts)."""
        entry = {**entry, "session_spent_s": round(self.budget.session_s(), 3)}
        jsonl.append_jsonl(self.journal, entry)
        return entry

    def record(self, stage: str, status: str, wall_s: float, **info: Any) -> None:
        entry = self.append({"stage": stage, "status": status, "wall_s": round(wall_s, 3), **info})
        self.status[stage] = entry
        if status == "done":
            self.done[stage] = entry
        else:
            self.done.pop(stage, None)
        self.write_index()

    # -- budget -------------------------------------------------------------------------------
    def estimate_s(self, stage: str) -> float | None:
        """The stage's expected wall time from what was measured; None before the baseline ran."""
        b = self.done.get("baseline")
        if stage in ("diff", "report"):
            return DIFF_S if stage == "diff" else REPORT_S
        if b is None:
            return None
        if stage == "tune":  # the least tune worth starting: its two baseline seeds and one knob
            return 3 * trial_estimate_s(b, self.cfg.tune_steps, self.cfg.profile_steps)
        if stage == "optimised":
            return run_estimate_s(b, b.get("steps_run") or self.cfg.train.steps)
        return None

    def reserve_after_s(self, stage: str) -> float:
        """The time the stages after `stage` keep: the optimised run (after the tune; with the
        grace a trial killed at the tune's deadline may take), the diff, the report."""
        keep = REPORT_S
        if stage in ("baseline", "tune", "optimised"):
            keep += DIFF_S
        if stage in ("baseline", "tune"):
            keep += (self.estimate_s("optimised") or 0.0) + (KILL_GRACE_S if stage == "tune" else 0.0)
        return keep

    def expected_s(self, stage: str) -> float:
        """What the stage may take: its estimate, or for the baseline and the tune their share."""
        left = max(0.0, self.budget.left_s())
        if stage == "baseline":
            return min(BASELINE_SHARE * left, max(0.0, left - self.reserve_after_s(stage)))
        if stage == "tune":
            return max(0.0, left - self.reserve_after_s(stage))
        est = self.estimate_s(stage)
        return est if est is not None else BASELINE_SHARE * left

    def left_estimate_s(self, stage: str, expected_s: float, running_s: float = 0.0) -> float:
        """About how long the study still takes while `stage` runs: up to the deadline while
        the tune is ahead or running (it takes what the budget leaves it), else what is left of
        the stage's expected time and the time kept for the stages after it."""
        left = max(0.0, self.budget.left_s())
        if stage in ("baseline", "tune"):
            return left
        return min(left, max(0.0, expected_s - running_s) + (self.reserve_after_s(stage) if stage != "report" else 0.0))

    def blocked(self, stage: str) -> str | None:
        """Why the stage cannot run now (a stage it reads did not finish, or it does not fit
        before the deadline with the later stages' time kept), or None."""
        need = NEEDS.get(stage)
        if need and need not in self.done:
            why = (self.status.get(need) or {}).get("status", "not run")
            return f"needs the {need} stage, which {'was ' + why if why != 'not run' else 'did not run'}"
        if stage == "report":
            return None  # always written: its time is kept by every stage before it
        keep = self.reserve_after_s(stage)
        to_deadline = self.budget.left_s()
        left = to_deadline - keep  # what this stage may use
        est = self.estimate_s(stage)
        if left <= 0 or (est is not None and est > left):
            what = {"tune": " (two baseline seeds and one knob)"}.get(stage, "")
            # the time to the deadline as it is, the kept time beside it: printing what is left
            # after the kept time as "left before the deadline" said "0 s" with 54 s to go (issue #37)
            return (f"time budget: {'needs ~' + duration(est, 's', 'wall') + what + ', ' if est is not None else ''}"
                    f"{duration(max(0.0, to_deadline), 's', 'wall')} left before the deadline and "
                    f"{duration(keep, 's', 'wall')} to keep for the stages after it")
        return None

    # -- the run ------------------------------------------------------------------------------
    def todo(self) -> list[str]:
        """The stages to run: from the first one not done (a tune that skipped trials for time
        counts as not done while a trial fits) to the report."""
        for i, s in enumerate(STAGES):
            if s not in self.done or (s == "tune" and not self.done[s].get("complete", True)
                                      and self._room_for_trials()):
                return list(STAGES[i:])
        return []

    def _room_for_trials(self) -> bool:
        b = self.done.get("baseline")
        return b is not None and trial_estimate_s(b, self.cfg.tune_steps, self.cfg.profile_steps) \
            <= self.budget.left_s() - self.reserve_after_s("tune")

    def run_all(self) -> StudyRecord:
        from trainprof.recordtypes.base import load

        todo, ran = self.todo(), False
        for stage in STAGES:
            if stage not in todo or (stage == "report" and not ran and "report" in self.done):
                if stage in self.done:
                    self.on_event("skip", {"stage": stage, "wall_s": self.done[stage]["wall_s"]})
                continue
            why = self.blocked(stage)
            if why:
                est = self.estimate_s(stage)
                self.record(stage, "skipped", 0.0, reason=why, **({"expected_s": round(est, 1)} if est else {}))
                self.on_event("skipped", {"stage": stage, "reason": why})
                continue
            self._run_stage(stage)
            ran = True
        self.write_index()
        return load(self.out / "study.json", StudyRecord)

    def _run_stage(self, stage: str) -> None:
        clock = self.budget.clock
        expected = self.expected_s(stage)
        self.on_event("start", {"stage": stage, "index": STAGES.index(stage) + 1, "of": len(STAGES),
                                "expected_s": expected, "spent_s": self.budget.spent_s(),
                                "budget_s": self.budget.total_s, "left_s": self.left_estimate_s(stage, expected)})
        t0 = clock()
        self.running = {"stage": stage, "since": t0, "detail": "", "expected_s": expected}
        try:
            with self._heartbeat():
                # each stage by name, not getattr(self, f"_{stage}"): the call graph stays readable (and vulture's)
                info = {"baseline": self._baseline, "tune": self._tune, "optimised": self._optimised,
                        "diff": self._diff, "report": self._report}[stage]()
        except OutOfTime as e:
            self.running = {}
            self.record(stage, "skipped", clock() - t0, reason=str(e))
            self.on_event("skipped", {"stage": stage, "reason": str(e)})
            return
        except BaseException as e:  # Ctrl-C included: its time was spent, a resume counts it
            self.running = {}
            self.record(stage, "failed", clock() - t0, reason=f"{type(e).__name__}: {str(e)[:200]}")
            raise
        self.running = {}
        self.record(stage, "done", clock() - t0, expected_s=round(expected, 1), **info)
        self.on_event("done", {"stage": stage, "wall_s": self.done[stage]["wall_s"],
                               "spent_s": self.budget.spent_s(), "budget_s": self.budget.total_s})

    @contextlib.contextmanager
    def _heartbeat(self) -> Iterator[None]:
        """Every heartbeat_s while a stage runs: journal the time spent, tell the progress."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.heartbeat_s):
                run = dict(self.running)
                if not run:
                    continue
                self.append({"stage": "clock", "running": run["stage"]})
                running_s = self.budget.clock() - run["since"]
                self.on_event("heartbeat", {"stage": run["stage"], "detail": run.get("detail", ""),
                                            "running_s": running_s, "spent_s": self.budget.spent_s(),
                                            "budget_s": self.budget.total_s,
                                            "left_s": self.left_estimate_s(run["stage"], run["expected_s"], running_s)})

        t = threading.Thread(target=beat, name="trainprof-study-heartbeat", daemon=True)
        if self.heartbeat_s > 0:
            t.start()
        try:
            yield
        finally:
            stop.set()
            if t.is_alive():
                t.join(timeout=2.0)

    def write_index(self) -> None:
        """study.json: the plan, the budget, the stages and which file holds which record."""
        records = {"run": "baseline/run.json", "analysis": "baseline/analysis.json", "tune": "tune/tune.json",
                   "optimised": "optimised/analysis.json", "optimised_run": "optimised/run.json",
                   "diff": "diff.json"}
        stages = []
        for s in STAGES:
            e = self.status.get(s) or {}
            expected = e.get("expected_s") if e.get("status") in ("done", "skipped") else None
            status = "running" if self.running.get("stage") == s else e.get("status", "pending")
            stages.append(Stage(stage=s, status=status, wall_s=e.get("wall_s"),
                                expected_s=round(self.expected_s(s), 1) if expected is None else expected,
                                reason=e.get("reason") or UNSET,
                                steps_run=UNSET if e.get("steps_run") is None else e["steps_run"]))
        # the blocks each stage computed, as its journal entry keeps them (typed here, once)
        blocks = {k: msgspec.convert(self.done[s][k], t) for s, k, t in (
            ("baseline", "ncu", NcuPlan), ("optimised", "choice", Choice), ("baseline", "machine", Machine),
            ("optimised", "accuracy", Accuracy), ("optimised", "stop", StopCriterion), ("diff", "speedup", Speedup)) if s in self.done and k in self.done[s]}
        spent_before = self.running.get("spent_before_s",  # the report stage, while it renders
                                        self.done.get("report", {}).get("spent_before_s", UNSET))
        doc = StudyRecord(config=self.cfg.record(), budget_s=round(self.budget.total_s, 3),
                          spent_s=round(self.budget.spent_s(), 3), budget_note=self.budget.note, stages=stages,
                          records={k: v for k, v in records.items() if (self.out / v).is_file()},
                          config_changes=self.changes or UNSET, **blocks, spent_before_s=spent_before)
        atomic.write_text(self.out / "study.json", jsontext.dumps(doc) + "\n")

    # -- stages -------------------------------------------------------------------------------
    def _profiled_run(self, stage: str, cfg: dict[str, Any], stop_at: float, kill_at: float) -> RunRecord:
        """`trainprof run --profile` of `cfg` into OUT/stage, which appears only when complete,
        ending its steps by `stop_at` and killed at `kill_at` (OutOfTime). A fresh process
        started by the trial runner (jobs/trial.py), so it dies with the study; it writes into
        its trial folder inside OUT, and the finished run is moved into place."""
        dest = self.out / stage
        shutil.rmtree(self.out / f".{stage}.partial", ignore_errors=True)  # where it was staged before
        shutil.rmtree(dest, ignore_errors=True)  # a stage not in the journal did not finish: redo it whole
        if self.launch is not None:
            return self.launch(self, stage, cfg, stop_at, kill_at)
        from trainprof.jobs.trial import run_command
        from trainprof.tune.reference import to_argv

        def argv(folder: Path) -> list[str]:
            return [sys.executable, "-m", "trainprof", "run", *to_argv(cfg), "--profile", "--profile-steps",
                    str(self.cfg.profile_steps), "--no-report", "--stop-at", f"{stop_at:.3f}",
                    "--out", str(folder / stage)]

        p = run_command(argv, lambda folder: (folder / stage).rename(dest), workdir=self.out,
                        timeout_s=max(1.0, kill_at - self.budget.clock()))
        logs = self.out / "logs"
        logs.mkdir(exist_ok=True)
        atomic.write_text(logs / f"{stage}.log", f"$ trainprof run {' '.join(to_argv(cfg))} --profile\n"
                          + p.stdout + p.stderr)
        if p.status == "timeout":
            raise OutOfTime(f"`trainprof run` still running at the deadline (before its steps could stop it), "
                            f"killed; see {logs / (stage + '.log')}")
        if p.status != "ok":
            raise StudyError(f"study {stage}: `trainprof run` failed ({p.reason}); see {logs / (stage + '.log')}, "
                             f"then `trainprof study --resume --out {self.out}`")
        return load_run(dest / "run.json")

    def _baseline(self) -> dict:
        from trainprof.jobs.study_extras import ncu_plan
        from trainprof.recordtypes.analysis import Analysis
        from trainprof.recordtypes.base import load

        cfg = self.cfg.run_config(self.cfg.train.steps)
        left = self.budget.left_s()
        # its steps stop at its share of the budget; the process may run past that (its
        # minimum: warm-up, one step, profile, validation) until only the report's time is left
        stop_at = self.budget.clock() + min(BASELINE_SHARE * left, left - self.reserve_after_s("baseline")) - POST_RUN_S
        run = self._profiled_run("baseline", cfg, stop_at, self.budget.deadline - REPORT_S)
        s = run.summary
        analysis = load(self.out / "baseline" / "analysis.json", Analysis)
        return {"config": cfg, "step_time_median_s": s.step_time_median_s, "val_loss": s.val_loss,
                "steps_run": len(run.steps), "ncu": ncu_plan(analysis.ranks[0], cfg),
                "machine": machine_of(run)}

    def _tune(self) -> dict:
        from dataclasses import replace

        from trainprof.jobs.tune import LadderFailed, climb, run_trial
        from trainprof.tune.reference import from_sparse

        knobs = self.cfg.tune.ladder()
        base = replace(from_sparse(self.done["baseline"]["config"]), steps=self.cfg.tune_steps)
        folder = self.out / "tune"
        folder.mkdir(exist_ok=True)
        deadline = self.budget.deadline - self.reserve_after_s("tune")
        runner = self.trial_runner or (lambda cfg, stop_at: run_trial(cfg, workdir=folder, stop_at=stop_at))
        begin, finished = self.trial_events(2 + len(knobs) + 2 * self.cfg.tune.verify_trials, deadline)

        try:
            doc, _ = climb(base, folder, self.cfg.tune, deadline=deadline, clock=self.budget.clock, runner=runner,
                           on_trial=finished, on_begin=begin,
                           estimate_s=trial_estimate_s(self.done["baseline"], self.cfg.tune_steps,
                                                       self.cfg.profile_steps))
        except LadderFailed as e:
            if "time budget" in str(e):  # its first baseline trial did not finish before the deadline
                raise OutOfTime(str(e)) from None
            raise StudyError(f"study tune: {e}") from None
        return tune_outcome(doc)

    def trial_events(self, total: int, deadline: float) -> tuple[Callable[[str], None], Callable[[dict], None]]:
        """The tune stage's (on_begin, on_trial): the running detail and the trial events of at most
        `total` trials (the preset's ladder and the program's alike)."""
        seen: list[dict] = []

        def begin(knob: str) -> None:
            self.running["detail"] = f"trial {len(seen) + 1} of at most {total}: {knob}"
            self.on_event("trial_start", {"stage": "tune", "knob": knob, "n": len(seen) + 1, "of": total})

        def finished(e: dict) -> None:
            seen.append(e)
            self.on_event("trial", {"stage": "tune", "knob": e["knob"], "wall_s": e.get("wall_s"), "n": len(seen),
                                    "of": total, "ok": e.get("ok"), "cut_short": e.get("cut_short", False),
                                    "walls_s": [x["wall_s"] for x in seen if x.get("wall_s")],
                                    "deadline_left_s": deadline - self.budget.clock()})

        return begin, finished

    def _optimised(self) -> dict:
        from dataclasses import replace

        from trainprof.jobs.study_verdicts import accuracy_verdict, stop_verdict
        from trainprof.recordtypes.base import load
        from trainprof.tune.reference import command, from_sparse, sparse

        tune = load(self.out / "tune" / "tune.json", Tune)
        choice = optimised_choice(tune)
        # as many steps as the baseline ran (it may have stopped at its share of the budget):
        # validation losses after different numbers of steps do not compare
        steps = self.done["baseline"].get("steps_run", self.cfg.train.steps)
        cfg = sparse(replace(from_sparse(choice["config"]), steps=steps))
        # it started because the baseline's measured wall time fits before `end`; its steps stop
        # early only if it runs slower than that (the trainer's tail estimate covers the child's
        # analysis: 1.3 per profiler step, measured ~1.0)
        end = self.budget.deadline - self.reserve_after_s("optimised")
        run = self._profiled_run("optimised", cfg, end, end + KILL_GRACE_S)
        base_run = load_run(self.out / "baseline" / "run.json")
        choice = {**choice, "config": cfg, "command": command(cfg)}
        return {"choice": choice, "step_time_median_s": run.summary.step_time_median_s,
                "val_loss": run.summary.val_loss, "steps_run": len(run.steps),
                "accuracy": accuracy_verdict(tune, base_run, run, choice["knobs"]), "stop": stop_verdict(run)}

    def _diff(self) -> dict:
        from trainprof.jobs.diff import compare, write_diff
        from trainprof.jobs.study_verdicts import speedup
        from trainprof.options import TopK
        from trainprof.recordtypes.base import load

        runs = [load_run(self.out / s / "run.json") for s in ("baseline", "optimised")]
        doc, ranks = compare(*(str(self.out / s / "trace.json.gz") for s in ("baseline", "optimised")), TopK.k,
                             runs=(runs[0], runs[1]))
        tune = load(self.out / "tune" / "tune.json", Tune)
        sp = speedup(tune, self.done["optimised"]["choice"], runs, ranks, doc)
        write_diff(self.out, doc, None if sp["equal_tokens_per_step"] else UNLIKE)
        return {"speedup": sp}

    def _report(self) -> dict:
        from trainprof.jobs.study_extras import write_reports_extras
        from trainprof.report.files import write_reports

        write_reports_extras(self.out)
        # what the report prints as spent: fixed now, so `trainprof report` later renders the same text
        self.running["spent_before_s"] = round(self.budget.spent_s(), 3)
        self.write_index()  # study.json before the report reads it
        written = write_reports(self.out)
        return {"files": [p.name for p in written], "spent_before_s": self.running["spent_before_s"]}


def tune_outcome(doc: Tune) -> dict:
    """The tune stage's journal entry: the kept knobs, and whether the ladder ran to its end (no
    trial skipped for the budget, no verify pair left out)."""
    from trainprof.recordtypes.base import known

    v = doc.best.verify
    complete = not any(t.skipped and (t.reason or "").startswith("time budget") for t in doc.trials) \
        and not (v is not None and known(v.skipped_pairs))
    return {"best_knobs": doc.best.knobs, "complete": complete}


def optimised_choice(tune: Tune) -> dict:
    """Which configuration the optimised profile runs, and why in words: the verified best;
    else the kept knobs the verify pairs did not confirm (to show what they change); else
    the baseline again (its second profile shows the run-to-run noise)."""
    best = tune.best
    if best.knobs:
        return {"what": "best", "knobs": best.knobs, "config": best.config}
    u = best.unconfirmed
    if u and u.config:
        return {"what": "unconfirmed", "knobs": u.knobs, "config": u.config}
    return {"what": "baseline", "knobs": [], "config": tune.baseline.config}


def start(out: Path, cfg: StudyConfig, *, resume: bool, force: bool = False, given: set[str] | None = None,
          budget_minutes: float | None = None, resume_anyway: bool = False,
          on_event: Callable[[str, dict], None] | None = None, clock: Callable[[], float] | None = None,
          kind: Callable[[StudyConfig], type[Study]] | None = None, **hooks: Any) -> Study:
    """A new study in `out` (which must not hold anything unless `force`), or the one there
    (`resume`: the flags in `given` must match its journaled configuration unless
    `resume_anyway`; its budget is what the journal left, or `budget_minutes` from now).
    `kind`: the Study class for the configuration (jobs/study_program.start: a program's for
    `-- COMMAND`); `hooks`: Study's launch, trial_runner, heartbeat_s (tests)."""
    import time

    from trainprof.jobs.study_resume import plan_entry, resume_budget, resume_config

    clock = clock or time.time
    if resume:
        cfg, changes = resume_config(out, cfg, set(given or ()), anyway=resume_anyway)
    kind = (kind or (lambda c: Study))(cfg)
    if resume:
        budget = resume_budget(out, cfg.budget_minutes, budget_minutes, clock)
        study = kind(out, cfg, budget, on_event or _quiet, **hooks)
        study.load()
        atomic.clean_stale(out)  # trial folders a killed study left
        if changes:
            jsonl.append_jsonl(study.journal, plan_entry(cfg, budget.total_s, changes))
            study.changes += changes
    else:
        outdir.check_out(out, force=force)
        if force:
            outdir.clear_for_force(out)
        out.mkdir(parents=True, exist_ok=True)
        budget = Budget(60.0 * cfg.budget_minutes, 0.0, clock(), clock)
        study = kind(out, cfg, budget, on_event or _quiet, **hooks)
        jsonl.append_jsonl(study.journal, plan_entry(cfg, budget.total_s))
    jsonl.append_jsonl(study.journal, {"stage": "session", "budget_s": round(budget.total_s, 3),
                                        "spent_before_s": round(budget.spent_before_s, 3), "note": budget.note})
    return study

