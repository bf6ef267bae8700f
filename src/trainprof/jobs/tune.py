"""`trainprof tune` as a job: the optimisation ladder on the reference workload.

    from trainprof.jobs.tune import execute
    from trainprof.jobs.tune_config import TuneJob
    res = execute(TuneJob(train=TrainConfig(device="cpu", dtype="fp32", steps=10),
                          output=OutputOptions(out="t")))
    res.doc.best.speedup

jobs/tune_config.py declares its configuration, cli/tune.py parses the flags and prints; `trainprof study` runs its tune stage through
`climb`. Every trial is a fresh `trainprof run` process (jobs/trial.py: its own process group,
dying with the tuner, a timeout), whose command line is the trial's exact reproduction; its
folder lives inside the tune's folder, so a trial left by a `kill -9` is cleaned on the next
start. The tune's folder holds tune.json (tune/record.py), journal.jsonl (tune/journal.py:
`--resume` replays it) and tune.png.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable

from trainprof import atomic, jsontext, owned
from trainprof.errors import UsageError
from trainprof.jobs.tune_config import TuneJob
from trainprof.jobs.tune_folder import LadderFailed, TuneResult, check_out, prepare  # noqa: F401 - jobs.tune's API
from trainprof.recordtypes.run import RunRecord, load_run
from trainprof.recordtypes.tune import Tune
from trainprof.tune.config import TuneConfig
from trainprof.tune.ladder import TrialResult
from trainprof.tune.reference import sparse, to_argv
from trainprof.workload.config import TrainConfig

# A trial past this is recorded as timed out (a rejected knob) instead of stalling the tune;
# 15 min is far above the tiny preset's trials (seconds) and leaves room for torch.compile.
TRIAL_TIMEOUT_S = 900.0
# A trial with a deadline: its child stops its steps this much before it (writing run.json and
# exiting take ~1-2 s on the tiny preset), and is killed this long after it when it is still
# running (stuck in start-up or torch.compile before a step could end it).
POST_TRIAL_S = 3.0
KILL_GRACE_S = 10.0


# ---- one trial -----------------------------------------------------------------------------
def run_trial(cfg: TrainConfig, timeout_s: float = TRIAL_TIMEOUT_S, workdir: Path | None = None,
              stop_at: float | None = None) -> TrialResult:
    """One trial: `trainprof run <the flags of cfg> --out <trial folder>/run --json` in a fresh
    process (jobs/trial.py). Its folder is `.trainprof-trial.<pid>.*.partial` in `workdir`
    (the tune's folder; default: the system temp folder). `stop_at` (seconds since the epoch):
    the trial ends by then, its steps stopping early at a step boundary (`--stop-at`, POST_TRIAL_S
    before, for what the child does after its steps); one still running KILL_GRACE_S after it
    (stuck in start-up or compilation, before any step could stop it) is killed: `cut_short`."""
    import time

    from trainprof.jobs.trial import run_command

    child_stop = None if stop_at is None else stop_at - POST_TRIAL_S
    if stop_at is not None:
        timeout_s = max(1.0, min(timeout_s, stop_at + KILL_GRACE_S - time.time()))

    def argv(folder: Path) -> list[str]:
        return [sys.executable, "-m", "trainprof", "run", *to_argv(cfg), "--out", str(folder / "run"), "--json",
                *(["--stop-at", f"{child_stop:.3f}"] if child_stop is not None else [])]

    out = run_command(argv, lambda folder: load_run(folder / "run" / "run.json"),
                      timeout_s=timeout_s, workdir=workdir)
    if out.status == "timeout" and stop_at is not None and time.time() >= stop_at:
        return TrialResult(ok=False, cut_short=True, reason="time budget spent: still running at the deadline "
                           "(before its steps could stop it), killed")
    if out.status != "ok":
        return TrialResult(ok=False, reason=out.reason.removeprefix("trainprof: error: "))
    return trial_result(out.record)


def trial_result(run: RunRecord) -> TrialResult:
    """What the ladder reads from a run.json: losses, validation loss, tokens/s of the median
    measured step (fair across batch sizes), MFU, peak memory, and the warm-up's extra time.
    A run that stopped at its deadline before its last step is `cut_short`."""
    s = run.summary
    steps = run.steps
    warm = steps[: s.warmup_steps]
    med = s.step_time_median_s
    asked = run.config.get("steps") or len(steps)
    cut = len(steps) < asked
    return TrialResult(
        ok=True, losses=[x.loss for x in steps], val_loss=s.val_loss,
        tokens_per_s=s.tokens_per_step / med if med > 0 else 0.0, step_time_s=med, mfu=s.mfu,
        peak_memory_bytes=s.peak_memory_bytes,
        compile_s=max(0.0, sum(x.step_time_s for x in warm) - len(warm) * med),
        cut_short=cut, reason=f"time budget spent: stopped at the deadline after {len(steps)} of {asked} steps"
        if cut else None, tokens_per_step=s.tokens_per_step,
    )


# ---- the ladder into a folder --------------------------------------------------------------
def climb(base: TrainConfig, folder: Path, tune: TuneConfig, *, budget_s: float | None = None,
          on_trial: Callable[[dict], None] | None = None, runner: Callable[..., TrialResult] | None = None,
          deadline: float | None = None, estimate_s: float | None = None,
          on_begin: Callable[[str], None] | None = None,
          clock: Callable[[], float] | None = None) -> tuple[Tune, Path | None]:
    """Run the ladder of `tune` from `base` (resolved, device explicit) with its journal in
    `folder`; write tune.json and tune.png there; (tune.json's record, the chart or None).
    Time: a `deadline` (`clock()` time, the study's), else `budget_s` from now less what the
    journal already spent (tune/ladder.py). Raises LadderFailed."""
    import time

    from trainprof.report.tune_terminal import write_chart
    from trainprof.tune.journal import Journal
    from trainprof.tune.ladder import run_ladder
    from trainprof.tune.ladder_config import LadderConfig
    from trainprof.tune.record import tune_document

    runner = runner or functools.partial(run_trial, workdir=folder)  # trial folders inside the tune's
    config = LadderConfig.of(tune, device=base.device.split(":")[0], budget_s=budget_s, deadline=deadline,
                             clock=clock or time.time, estimate_s=estimate_s, on_trial=on_trial, on_begin=on_begin)
    result = run_ladder(runner, tune.ladder(), base, config, Journal(folder / "journal.jsonl"))
    if result.error:
        raise LadderFailed(result.error)
    doc = tune_document(sparse(base), result)
    atomic.write_text(folder / "tune.json", jsontext.dumps(doc) + "\n")
    return doc, write_chart(doc, folder)


# ---- `trainprof tune` ----------------------------------------------------------------------
def execute(job: TuneJob, on_trial: Callable[[dict], None] | None = None,
            on_begin: Callable[[str], None] | None = None) -> TuneResult:
    """Check --out, decide the device, prepare the folder, climb the ladder, write the reports
    (a COMMAND: jobs/tune_program.py)."""
    if job.argv:
        from trainprof.jobs import tune_program

        return tune_program.execute(job, on_trial=on_trial, on_begin=on_begin)
    from trainprof.backends import resolve_device
    from trainprof.errors import InputError
    from trainprof.report.files import auto_report

    check_out(job)  # before the device is touched: a bad --out costs nothing
    base = job.train.resolved()
    base = replace(base, device=resolve_device(base.device))
    if base.data is not None and not Path(base.data).exists():
        raise InputError(f"--data {base.data}: no such file or folder")
    out = prepare(job)
    with owned.tracking(out):  # each file the tune writes joins the folder's manifest (--force removes those)
        try:
            doc, chart = climb(base, out, job.tune, budget_s=60 * job.budget_minutes, on_trial=on_trial,
                               on_begin=on_begin)
        except LadderFailed as e:
            raise UsageError(f"tune: {e}") from None
        note = auto_report(out, enabled=job.output.report)
    return TuneResult(out, doc, chart, note)
