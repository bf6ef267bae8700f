"""A study without training, exact and fast: a fake clock, and profiled runs and tune trials
whose steps advance it, ending at a step boundary by the trainer's own rule
(workload/trainer.StopAt), with the records a real run writes (the saved cpu_run run.json
and analysis.json, re-timed) and a small CPU trace for the diff stage."""

from __future__ import annotations

import copy
import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from trainprof.collect.profiler import ProfileConfig
from trainprof.recordtypes.run import load_run
from trainprof.tune import TrialResult
from trainprof.workload.config import TrainConfig
from trainprof.workload.trainer import StopAt, tail_steps

REPORTS = Path(__file__).resolve().parents[2] / "data" / "reports"
RUN = json.loads((REPORTS / "cpu_run" / "run.json").read_text())
ANALYSIS = json.loads((REPORTS / "cpu_run" / "analysis.json").read_text())
T0 = 1_800_000_000.0  # the fake epoch clock's start


class Clock:
    """time.time() for the study under test: it moves only when a fake step or start-up runs."""

    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


@dataclass
class Machine:
    """How long things take: a plain step, a process start, what follows the steps."""

    clock: Clock
    step_s: float = 1.0
    start_s: float = 5.0  # process start, data, model
    post_s: float = 2.0  # trace analysis, run.json
    eval_cost: float = 0.25  # a validation batch, in steps (the trainer assumes 0.35: on the safe side)
    speed: dict = field(default_factory=dict)  # TrainConfig field set by a knob → tokens/s factor
    slow_start: dict = field(default_factory=dict)  # TrainConfig field → extra start-up seconds (compile)
    calls: list = field(default_factory=list)  # (what, steps asked, steps run, stop_at)

    def train(self, cfg: TrainConfig, stop_at: float | None, profile_steps: int = 0,
              kill_at: float | None = None) -> int | None:
        """Advance the clock through one run of `cfg`: the steps it ran, or None when it was
        killed at `kill_at` (the clock then reads kill_at)."""
        step = self.step_s / self.factor(cfg)
        prof = ProfileConfig(active=profile_steps) if profile_steps else None
        stop = StopAt(stop_at, tail_steps(cfg, prof, 0)) if stop_at is not None else None
        done: list = []

        def spend(s: float) -> bool:  # False: killed on the way
            if kill_at is not None and self.clock.t + s > kill_at:
                self.clock.t = kill_at
                return False
            self.clock.sleep(s)
            return True

        if not spend(self.start_s + sum(v for k, v in self.slow_start.items() if getattr(cfg, k))):
            return self._log(cfg, None, stop_at)
        for i in range(cfg.steps):
            if not spend(step):
                return self._log(cfg, None, stop_at)
            done.append(SimpleNamespace(step_time_s=step))
            if stop is not None and i + 1 < cfg.steps and stop.now(done, cfg.warmup_steps, clock=self.clock):
                break
        tail = (prof.total_steps if prof else 0) + self.eval_cost * cfg.eval_batches
        if not spend(tail * step + self.post_s):
            return self._log(cfg, None, stop_at)
        return self._log(cfg, len(done), stop_at)

    def _log(self, cfg: TrainConfig, n: int | None, stop_at: float | None) -> int | None:
        self.calls.append((cfg, n, stop_at))
        return n

    def factor(self, cfg: TrainConfig) -> float:
        f = 1.0
        for k, v in self.speed.items():
            if getattr(cfg, k):
                f *= v
        return f

    # -- the study's hooks -------------------------------------------------------------------
    def launch(self, study, stage: str, cfg: dict, stop_at: float, kill_at: float) -> dict:  # noqa: ANN001
        from trainprof.jobs.study import OutOfTime
        from trainprof.tune.reference import from_sparse

        c = from_sparse(cfg)
        n = self.train(c, stop_at, profile_steps=study.cfg.profile_steps, kill_at=kill_at)
        if n is None:
            raise OutOfTime("`trainprof run` still running at the deadline, killed")
        run = run_record(c, n, self.step_s / self.factor(c))
        dest = study.out / stage
        dest.mkdir(parents=True)
        (dest / "run.json").write_text(json.dumps(run))
        (dest / "analysis.json").write_text(json.dumps(ANALYSIS))
        write_cpu_trace(dest / "trace.json.gz", mm_us=400.0 / self.factor(c))
        return load_run(dest / "run.json")  # as jobs/study.py reads what `trainprof run` wrote

    def trial(self, cfg: TrainConfig, stop_at: float | None = None) -> TrialResult:
        """As jobs/tune.run_trial: the child stops its steps POST_TRIAL_S before `stop_at` and
        is killed KILL_GRACE_S after it."""
        from trainprof.jobs.tune import KILL_GRACE_S, POST_TRIAL_S

        n = self.train(cfg, None if stop_at is None else stop_at - POST_TRIAL_S,
                       kill_at=None if stop_at is None else stop_at + KILL_GRACE_S)
        if n is None:
            return TrialResult(ok=False, cut_short=True, reason="time budget spent: still running at the deadline")
        step = self.step_s / self.factor(cfg)
        losses = [5.0 - 0.1 * i + (0.01 if cfg.seed % 2 == 0 else 0.0) for i in range(n)]
        cut = n < cfg.steps
        return TrialResult(ok=True, losses=losses, val_loss=4.5, tokens_per_s=cfg.tokens_per_step / step,
                           step_time_s=step, mfu=0.5, peak_memory_bytes=1 << 30, cut_short=cut,
                           reason=f"time budget spent: stopped at the deadline after {n} of {cfg.steps} steps"
                           if cut else None)


def run_record(cfg: TrainConfig, n: int, step_s: float, val_loss: float = 4.5) -> dict:
    """The saved cpu_run run.json with `n` steps of `step_s` and cfg's tokens per step."""
    run = copy.deepcopy(RUN)
    tokens = cfg.tokens_per_step
    run["config"] = {**run["config"], **{k: getattr(cfg, k) for k in ("steps", "micro_batch", "seq_len", "dtype",
                                                                      "gc_disable", "compile", "seed")}}
    run["steps"] = [{**RUN["steps"][0], "step": i, "step_time_s": step_s, "tokens": tokens, "loss": 5.0 - 0.1 * i}
                    for i in range(n)]
    s = run["summary"]
    s.update(measured_steps=max(1, n - s["warmup_steps"]), step_time_s=step_s, step_time_median_s=step_s,
             tokens_per_step=tokens, tokens_per_s=tokens / step_s, val_loss=val_loss, loss_first=5.0,
             loss_last=5.0 - 0.1 * (n - 1))
    return run


def write_cpu_trace(path: Path, mm_us: float = 400.0, add_us: float = 100.0, steps: int = 1) -> None:
    """A CPU-only Kineto trace: per profiler step, two aten::mm of [64,128]×[128,256] (self
    time mm_us each) and one aten::add_ of [64,256] (add_us)."""
    ev, t = [], 0.0
    for s in range(steps):
        step_us = 2 * mm_us + add_us + 40.0
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 2}", "pid": 1, "tid": 1,
                   "ts": t, "dur": step_us})
        c = t + 10.0
        for _ in range(2):
            ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": c, "dur": mm_us,
                       "args": {"Input Dims": [[64, 128], [128, 256]], "Input type": ["float", "float"]}})
            c += mm_us + 10.0
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 1, "tid": 1, "ts": c, "dur": add_us,
                   "args": {"Input Dims": [[64, 256], [64, 256], []], "Input type": ["float", "float", "Scalar"]}})
        t += step_us
    with gzip.open(path, "wt") as f:
        json.dump({"schemaVersion": 1, "traceEvents": ev}, f)
