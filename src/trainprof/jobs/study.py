"""`trainprof study`: the profiling assignment end to end, in one resumable folder.

    baseline   train the configuration (validation loss) and profile one iteration:
               baseline/{run,analysis}.json, trace.json.gz, roofline.png; the top-5 operators
               on the roofline and the Nsight Compute command for their kernels
    tune       the optimisation ladder with the accuracy guard, inside the budget:
               tune/{tune.json, journal.jsonl, tune.png}
    optimised  the best configuration trained and profiled the same way: optimised/
    diff       baseline vs optimised profile, per iteration: diff.json, diff.md
    report     report.md (the assignment's report, every number from these records) + report.html

`journal.jsonl` (append-only, fsync'd) records each finished stage; `--resume` skips them and
the tune resumes from its own journal, as `trainprof tune --resume` does. `study.json` says
which record holds what, so `trainprof report DIR` renders the same report.

The two profiled runs and every tune trial are fresh `trainprof run` processes: a process's
peak RSS cannot be reset (ru_maxrss), and torch.compile caches and allocator state would
leak from one configuration into the next; a fresh process also makes its command line the
exact reproduction.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from trainprof import atomic
from trainprof.errors import TrainprofError, UsageError
from trainprof.recordtypes.diff import Diff

STUDY_SCHEMA = "trainprof.study/1"
STAGES = ("baseline", "tune", "optimised", "diff", "report")
# Shares of the budget expected per stage before anything is measured; replaced by
# measurements as stages finish (the optimised run is expected to take what the baseline took).
PRIOR_SHARE = {"baseline": 0.2, "tune": 0.55, "optimised": 0.2, "diff": 0.03, "report": 0.02}
REPORT_S = 10.0  # diff + report: two trace analyses and two renders, ~5-10 s on a 2-core CPU


class StudyError(TrainprofError):
    """A stage failed; the journal keeps what finished, `--resume` continues."""

    exit_code = 1


@dataclass(frozen=True)
class StudyConfig:
    preset: str = "tiny"
    """model size: tiny, gpt2-124m, gpt2-350m or gpt2-774m"""
    device: str = "auto"
    """auto, cpu, cuda or cuda:N"""
    micro_batch: int | None = None
    """sequences per forward (default: the preset's)"""
    seq_len: int | None = None
    """tokens per sequence (default: the preset's context)"""
    dtype: str = "fp32"
    """the baseline's dtype: mixed precision is one of the knobs tried"""
    steps: int = 30
    """optimizer steps of the baseline and the optimised run (validation loss after them)"""
    warmup_steps: int = 2
    """steps left out of each run's summary"""
    eval_batches: int = 8
    """validation batches after each run"""
    profile_steps: int = 1
    """iterations recorded by torch.profiler (the assignment profiles one)"""
    tune_steps: int = 10
    """steps per tune trial"""
    verify_trials: int = 2
    """best-vs-baseline pairs that confirm the tune's result"""
    knobs: tuple[str, ...] | None = None
    """subset of the tune catalogue, in order (default: the speed ladder)"""
    min_gain: float = 0.03
    """a knob is kept only if at least this much faster"""
    budget_minutes: float = 15.0
    """wall time for the whole study; the tune gets what the other stages leave"""
    seed: int = 1337
    """training seed"""
    data: str | None = None
    """text file or folder (default: this Python's stdlib sources)"""

    def validate(self) -> None:
        checks = [(self.steps >= 3, f"--steps {self.steps}: must be ≥ 3"),
                  (self.warmup_steps < self.steps, f"--warmup-steps {self.warmup_steps} must be below --steps"),
                  (self.profile_steps >= 1, f"--profile-steps {self.profile_steps}: must be ≥ 1"),
                  (self.tune_steps >= 3, f"--tune-steps {self.tune_steps}: must be ≥ 3"),
                  (self.warmup_steps < self.tune_steps, f"--warmup-steps {self.warmup_steps} must be below "
                   "--tune-steps"),
                  (self.verify_trials >= 0, f"--verify-trials {self.verify_trials}: must be ≥ 0"),
                  (self.budget_minutes > 0, f"--budget-minutes {self.budget_minutes:g}: must be > 0"),
                  (self.eval_batches >= 1, f"--eval-batches {self.eval_batches}: must be ≥ 1 (the accuracy "
                   "check needs a validation loss)"),
                  (self.min_gain >= 0, f"--min-gain {self.min_gain:g}: must be ≥ 0")]
        for ok, msg in checks:
            if not ok:
                raise UsageError(msg)

    def run_config(self, steps: int) -> dict[str, Any]:
        """The `trainprof run` configuration of the baseline, in tune.json's sparse form."""
        from dataclasses import replace

        from trainprof.backends import resolve_device
        from trainprof.tune.reference import sparse
        from trainprof.workload.config import TrainConfig

        cfg = TrainConfig(preset=self.preset, device=self.device, micro_batch=self.micro_batch, seq_len=self.seq_len,
                          dtype=self.dtype, seed=self.seed, steps=steps, warmup_steps=self.warmup_steps,
                          eval_batches=self.eval_batches, data=self.data).resolved()
        return sparse(replace(cfg, device=resolve_device(cfg.device)))


@dataclass
class Study:
    """One study folder: its journal, its plan and what each stage measured."""

    out: Path
    cfg: StudyConfig
    on_event: Callable[[str, dict], None] = lambda kind, info: None
    done: dict[str, dict] = field(default_factory=dict)  # stage → its journal entry

    @property
    def journal(self) -> Path:
        return self.out / "journal.jsonl"

    # -- budget -------------------------------------------------------------------------------
    def spent_s(self) -> float:
        return sum(e.get("wall_s", 0.0) for e in self.done.values())

    def expected_s(self) -> dict[str, float]:
        """Expected wall seconds of each stage: measured for finished ones; the optimised run
        as long as the baseline run; the tune whatever the budget leaves."""
        budget = 60.0 * self.cfg.budget_minutes
        exp = {s: PRIOR_SHARE[s] * budget for s in STAGES}
        for s, e in self.done.items():
            exp[s] = e["wall_s"]
        if "baseline" in self.done and "optimised" not in self.done:
            exp["optimised"] = self.done["baseline"]["wall_s"]
        for s in ("diff", "report"):
            if s not in self.done:
                exp[s] = REPORT_S / 2
        if "tune" not in self.done:
            exp["tune"] = max(0.0, budget - sum(v for s, v in exp.items() if s != "tune"))
            if "baseline" in self.done:  # its baseline trials and verify pairs run whatever the budget
                exp["tune"] = max(exp["tune"], (2 + 2 * self.cfg.verify_trials) * self.trial_estimate_s())
        return exp

    def trial_estimate_s(self) -> float:
        """One tune trial: the baseline run's fixed cost (process start, data, evaluation,
        analysis) plus tune_steps of its median step."""
        e = self.done["baseline"]
        step, n = e["step_time_median_s"], self.cfg.steps + self.cfg.profile_steps
        fixed = max(0.0, e["wall_s"] - n * step)
        return fixed + self.cfg.tune_steps * step

    # -- journal ------------------------------------------------------------------------------
    def load(self) -> None:
        for e in atomic.read_jsonl(self.journal):
            if e.get("stage") in STAGES and e.get("status") == "done":
                self.done[e["stage"]] = e

    def record(self, stage: str, wall_s: float, **info: Any) -> None:
        entry = {"stage": stage, "status": "done", "wall_s": round(wall_s, 3), **info}
        atomic.append_jsonl(self.journal, entry)
        self.done[stage] = entry
        self.write_index()

    def write_index(self) -> None:
        """study.json: the plan, the stages' times and which file holds which record."""
        exp = self.expected_s()
        records = {"run": "baseline/run.json", "analysis": "baseline/analysis.json", "tune": "tune/tune.json",
                   "optimised": "optimised/analysis.json", "optimised_run": "optimised/run.json",
                   "diff": "diff.json"}
        doc = {"schema": STUDY_SCHEMA, "config": asdict(self.cfg), "budget_s": 60.0 * self.cfg.budget_minutes,
               "spent_s": round(self.spent_s(), 3),
               "stages": [{"stage": s, "status": "done" if s in self.done else "pending",
                           "wall_s": self.done[s]["wall_s"] if s in self.done else None,
                           "expected_s": self.done[s].get("expected_s", round(exp[s], 1)) if s in self.done
                           else round(exp[s], 1)} for s in STAGES],
               "records": {k: v for k, v in records.items() if (self.out / v).is_file()},
               **{k: self.done[s][k] for s, k in (("baseline", "ncu"), ("optimised", "choice"),
                                                  ("baseline", "machine"), ("diff", "iteration"))
                  if s in self.done and k in self.done[s]}}
        atomic.write_text(self.out / "study.json", atomic.dumps(doc) + "\n")

    # -- stages -------------------------------------------------------------------------------
    def run_all(self) -> dict:
        for stage in STAGES:
            if stage in self.done:
                self.on_event("skip", {"stage": stage, "wall_s": self.done[stage]["wall_s"]})
                continue
            self.on_event("start", {"stage": stage, "index": STAGES.index(stage) + 1, "of": len(STAGES),
                                    "expected_s": self.expected_s()[stage], "spent_s": self.spent_s(),
                                    "budget_s": 60.0 * self.cfg.budget_minutes})
            expected = self.expected_s()[stage]
            t0 = time.monotonic()
            info = getattr(self, f"_{stage}")()
            self.record(stage, time.monotonic() - t0, expected_s=round(expected, 1), **info)
            self.on_event("done", {"stage": stage, "wall_s": self.done[stage]["wall_s"]})
        return json.loads((self.out / "study.json").read_text("utf-8"))

    def _profiled_run(self, stage: str, cfg: dict[str, Any]) -> dict:
        """`trainprof run --profile` of `cfg` into OUT/stage, which appears only when complete.
        A fresh process started by the trial runner (jobs/trial.py), so it dies with the study;
        it writes into its trial folder inside OUT, and the finished run is moved into place."""
        from trainprof.jobs.trial import run_command
        from trainprof.tune.reference import to_argv

        dest = self.out / stage
        shutil.rmtree(self.out / f".{stage}.partial", ignore_errors=True)  # where it was staged before
        shutil.rmtree(dest, ignore_errors=True)  # a stage not in the journal did not finish: redo it whole

        def argv(folder: Path) -> list[str]:
            return [sys.executable, "-m", "trainprof", "run", *to_argv(cfg), "--profile", "--profile-steps",
                    str(self.cfg.profile_steps), "--no-report", "--out", str(folder / stage)]

        p = run_command(argv, lambda folder: (folder / stage).rename(dest), timeout_s=None, workdir=self.out)
        logs = self.out / "logs"
        logs.mkdir(exist_ok=True)
        atomic.write_text(logs / f"{stage}.log", f"$ trainprof run {' '.join(to_argv(cfg))} --profile\n"
                          + p.stdout + p.stderr)
        if p.status != "ok":
            raise StudyError(f"study {stage}: `trainprof run` failed ({p.reason}); see {logs / (stage + '.log')}, "
                             f"then `trainprof study --resume --out {self.out}`")
        return json.loads((dest / "run.json").read_text("utf-8"))

    def _baseline(self) -> dict:
        cfg = self.cfg.run_config(self.cfg.steps)
        run = self._profiled_run("baseline", cfg)
        s = run["summary"]
        analysis = json.loads((self.out / "baseline" / "analysis.json").read_text("utf-8"))
        return {"config": cfg, "step_time_median_s": s["step_time_median_s"], "val_loss": s["val_loss"],
                "ncu": ncu_plan(analysis["ranks"][0], cfg),
                "machine": {"cpu_count": (run.get("environment") or {}).get("cpu_count"),
                            **{k: ((run.get("system") or {}).get("summary") or {}).get(k)
                               for k in ("cpu_util_pct", "others_cpu_pct", "load_avg_1m")}}}

    def _tune(self) -> dict:
        from dataclasses import replace

        from trainprof.jobs.tune import LadderFailed, climb, speed_ladder
        from trainprof.tune.catalogue import by_name
        from trainprof.tune.reference import from_sparse

        knobs = by_name(list(self.cfg.knobs)) if self.cfg.knobs else speed_ladder()
        base = replace(from_sparse(self.done["baseline"]["config"]), steps=self.cfg.tune_steps)
        folder = self.out / "tune"
        folder.mkdir(exist_ok=True)
        # run_ladder checks its budget before each knob; the two baseline trials come before
        # and the verify pairs after, so they are reserved out of the knobs' share
        reserve = (2 + 2 * self.cfg.verify_trials) * self.trial_estimate_s()
        budget = 60.0 * self.cfg.budget_minutes
        left = budget - self.spent_s() - sum(v for k, v in self.expected_s().items()
                                             if k in ("optimised", "diff", "report"))
        knob_budget = max(0.0, left - reserve)
        try:
            doc, _ = climb(base, knobs, folder, min_gain=self.cfg.min_gain,
                           budget_s=knob_budget + 2 * self.trial_estimate_s(), verify_trials=self.cfg.verify_trials,
                           on_trial=lambda e: self.on_event("trial", {"stage": "tune", "knob": e["knob"],
                                                                      "wall_s": e.get("wall_s")}))
        except LadderFailed as e:
            raise StudyError(f"study tune: {e}") from None
        return {"knob_budget_s": round(knob_budget, 1), "best_knobs": doc["best"]["knobs"]}

    def _optimised(self) -> dict:
        tune = json.loads((self.out / "tune" / "tune.json").read_text("utf-8"))
        from dataclasses import replace

        from trainprof.tune.reference import command, from_sparse, sparse

        choice = optimised_choice(tune)
        cfg = sparse(replace(from_sparse(choice["config"]), steps=self.cfg.steps))
        run = self._profiled_run("optimised", cfg)
        choice = {**choice, "config": cfg, "command": command(cfg)}
        return {"choice": choice, "step_time_median_s": run["summary"]["step_time_median_s"],
                "val_loss": run["summary"]["val_loss"]}

    def _diff(self) -> dict:
        from trainprof.analysis.diff import diff_record
        from trainprof.jobs.analyze import add_findings, analyze_one
        from trainprof.report.diff_terminal import diff_markdown

        ranks = []
        for stage in ("baseline", "optimised"):
            r = analyze_one(str(self.out / stage / "trace.json.gz"), 10**9)  # every op: the diff matches them
            add_findings(r, json.loads((self.out / stage / "run.json").read_text("utf-8")))
            ranks.append(r)
        doc = diff_record(*ranks, 10)
        atomic.write_text(self.out / "diff.json", atomic.dumps(doc) + "\n")
        atomic.write_text(self.out / "diff.md", diff_markdown(doc) + "\n")
        runs = [json.loads((self.out / s / "run.json").read_text("utf-8")) for s in ("baseline", "optimised")]
        return {"iteration": iteration_speedup(ranks, runs, doc)}

    def _report(self) -> dict:
        from trainprof.report.files import write_reports

        write_reports_extras(self.out)
        self.write_index()  # study.json before the report reads it
        written = write_reports(self.out)
        return {"files": [p.name for p in written]}


def iteration_speedup(ranks: list[dict], runs: list[dict], diff: Diff) -> dict:
    """Time per iteration, baseline → optimised, measured two ways: the profiled iteration
    (the GPU step span of the diff; on a CPU trace the profiler step's host time) and the
    median step of the two runs' measured steps."""
    st = diff.step_time_us
    if st.speedup:
        prof = {"base_us": st.base, "new_us": st.new, "source": "GPU time per profiled step (trainprof diff)"}
    else:
        cpu = [sum(p["cpu_us"] for p in r.get("per_step") or []) / max(1, len(r.get("per_step") or []))
               for r in ranks]
        prof = {"base_us": cpu[0], "new_us": cpu[1], "source": "host time of the profiled step (CPU trace)"}
    prof["speedup"] = prof["base_us"] / prof["new_us"] if prof["new_us"] else None
    b, n = (r["summary"]["step_time_median_s"] for r in runs)
    return {"profiled": prof, "runs": {"base_s": b, "new_s": n, "speedup": b / n if n else None,
                                       "source": "median measured step of each run (run.json)"}}


def optimised_choice(tune: dict) -> dict:
    """Which configuration the optimised profile runs, and why in words: the verified best;
    else the kept knobs the verify pairs did not confirm (to show what they change); else
    the baseline again (its second profile shows the run-to-run noise)."""
    best = tune["best"]
    if best.get("knobs"):
        return {"what": "best", "knobs": best["knobs"], "config": best["config"]}
    u = best.get("unconfirmed")
    if u and u.get("config"):
        return {"what": "unconfirmed", "knobs": u["knobs"], "config": u["config"]}
    return {"what": "baseline", "knobs": [], "config": tune["baseline"]["config"]}


def ncu_plan(rank: dict, cfg: dict[str, Any]) -> dict:
    """The Nsight Compute commands for the baseline's top kernels (analysis/ncu.py), with the
    baseline's own `trainprof run` as the program. A CPU trace has no kernels: then the command
    filters on the profiled step's NVTX range of the same workload run on a GPU, and says so."""
    import shlex
    from dataclasses import replace

    from trainprof.analysis.ncu import METRICS, SECTIONS, ncu_command
    from trainprof.tune.reference import command, from_sparse

    run = from_sparse(cfg)
    program = command(replace(run, device=run.device if run.device.startswith("cuda") else "cuda", steps=4))
    kernels = [k for k in rank.get("top_kernels", []) if k.get("class") not in ("memcpy", "memset")][:5]
    if rank.get("has_gpu") and kernels:
        collect, export = ncu_command(kernels, rank.get("steps") or 1, program, "study_ncu")
        return {"applies": True, "collect": collect, "export": export, "kernels": [k["name"] for k in kernels]}
    collect = ["ncu", "--target-processes", "all", "--nvtx", "--nvtx-include", "trainprof.step/",
               "--launch-count", "200"]
    for s in SECTIONS:
        collect += ["--section", s]
    collect += ["--metrics", ",".join(METRICS), "-o", "study_ncu", "--", *shlex.split(program)]
    return {"applies": False, "collect": shlex.join(collect),
            "export": "ncu --import study_ncu.ncu-rep --csv --page raw --print-units base > study_ncu.csv",
            "reason": "this trace ran on a CPU: Nsight Compute measures CUDA kernels only, so the roofline "
                      "below places operators by the FLOPs and bytes of their recorded shapes against this "
                      "machine's measured peaks; on a GPU, run the command (the kernels of the profiled step, "
                      "NVTX range trainprof.step) and `trainprof analyze TRACE --ncu study_ncu.csv`"}


def write_reports_extras(out: Path) -> None:
    """reproduce.sh and requirements.txt: the assignment asks for a runnable environment and
    the script that runs the code; both are written from the records."""
    import dataclasses

    from trainprof.tune.reference import command
    from trainprof.workload.config import TrainConfig

    names = {f.name for f in dataclasses.fields(TrainConfig)}
    runs = {s: json.loads((out / s / "run.json").read_text("utf-8")) for s in ("baseline", "optimised")
            if (out / s / "run.json").is_file()}
    lines = ["#!/bin/sh", "# The study's two profiled runs (trainprof study), one line each.", "set -e"]
    for s, run in runs.items():
        cfg = TrainConfig(**{k: v for k, v in run["config"].items() if k in names})  # not the derived fields
        lines.append(f"{command(cfg)} --profile --profile-steps 1 --out runs/{s}")
    atomic.write_text(out / "reproduce.sh", "\n".join(lines) + "\n")
    from trainprof import __version__

    env = (runs.get("baseline") or {}).get("environment") or {}
    torch_v = str(env.get("torch") or "").split("+")[0]
    # the versions the runs recorded; trainprof brings its own dependencies (pyproject.toml)
    req = [f"# Python {env.get('python') or '>= 3.10'}; install trainprof from its repository (pip install .)",
           f"torch=={torch_v}" if torch_v else "torch>=2.4", f"trainprof=={__version__}"]
    atomic.write_text(out / "requirements.txt", "\n".join(req) + "\n")


def start(out: Path, cfg: StudyConfig, *, resume: bool, force: bool = False, budget_given: bool = True,
          on_event: Callable[[str, dict], None] | None = None) -> Study:
    """A new study in `out` (which must not hold anything unless `force`), or the one there
    (`resume`: its journaled configuration wins; a `budget_given` larger budget raises it)."""
    cfg.validate()
    if resume:
        if not (out / "journal.jsonl").is_file():
            raise UsageError(f"--resume needs --out DIR holding the journal.jsonl of an earlier study ({out})")
        plan = next((e for e in atomic.read_jsonl(out / "journal.jsonl") if e.get("stage") == "plan"), None)
        if plan is None:
            raise UsageError(f"{out / 'journal.jsonl'}: no plan entry (not a study journal)")
        saved = {**plan["config"], "knobs": tuple(plan["config"]["knobs"]) if plan["config"].get("knobs") else None}
        if budget_given:
            saved["budget_minutes"] = max(saved["budget_minutes"], cfg.budget_minutes)
        study = Study(out, StudyConfig(**saved), on_event or (lambda k, i: None))
        study.load()
        return study
    atomic.check_out(out, force=force)
    if force:
        atomic.clear_for_force(out)
    out.mkdir(parents=True, exist_ok=True)
    study = Study(out, cfg, on_event or (lambda k, i: None))
    atomic.append_jsonl(study.journal, {"stage": "plan", "config": asdict(cfg)})
    return study

