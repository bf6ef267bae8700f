"""The ladder: baseline (two seeds, for the guard's noise), then one knob at a time in the
catalogue's order, keeping each that is faster by at least `min_gain` and passes the guard;
finally the kept combination is re-measured against the baseline, alternating, and the
median ratio reported; a combination those pairs do not confirm (median below `1 + min_gain`)
is not kept, and the baseline stays the best configuration.

The engine knows nothing about how a trial trains: a `runner(config: TrainConfig) -> TrialResult`
does it (jobs/tune.py runs each trial as a fresh `trainprof run` process; a user passes their own
function). Knobs return new configs (`dataclasses.replace`); trial ids, the journal and the
result carry each config's sparse form (reference.sparse: the pinned fields + what changed).
The rungs, the tolerance and the verify pairs are tune.json's own Structs (recordtypes/tune.py:
`Trial`, `Tolerance`, `Verify`), built here and written as they are; a caller composes the
ladder's settings once, in a `LadderConfig` (tune/ladder_config.py).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import statistics
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable

from msgspec import UNSET, structs

from trainprof.recordtypes.tune import Tolerance, Trial, Unconfirmed, Verify, VerifyPair
from trainprof.tune.catalogue import Knob
from trainprof.tune.journal import Journal
from trainprof.tune.ladder_config import LadderConfig
from trainprof.tune.reference import sparse


@dataclass
class TrialResult:
    ok: bool  # the run finished (no OOM, no crash)
    reason: str | None = None  # why not
    losses: list = field(default_factory=list)  # per measured step
    val_loss: float | None = None
    tokens_per_s: float = 0.0  # median step → tokens/s: batch-size-fair
    step_time_s: float = 0.0
    mfu: float | None = None
    peak_memory_bytes: int | None = None
    compile_s: float = 0.0  # warm-up time beyond steady state, excluded from the speed
    cut_short: bool = False  # stopped at the deadline before its last step: not journaled, its knob skipped
    notes: dict | None = None  # what a program trial's agent did and found (tune/program.py); None: nothing
    tokens_per_step: int = 0  # per optimizer step (micro-batch × seq × accumulation); 0: unknown (a program's)


def entry_fields(r: TrialResult) -> dict[str, Any]:
    """A result as the journal keeps it (`notes` only when there are some: a reference-workload
    journal line is as it was)."""
    d = asdict(r)
    if d.get("notes") is None:
        d.pop("notes", None)
    return d


Runner = Callable[..., TrialResult]  # runner(config) or, to honour a deadline inside a trial, runner(config, stop_at=T)


def trial_id(index: int, knob: str, shown: dict[str, Any]) -> str:
    """`01:compile:3f2a…`: the ladder position, the knob and a hash of the sparse config (what
    `--resume` matches a journal line on)."""
    h = hashlib.sha1(json.dumps(shown, sort_keys=True).encode()).hexdigest()[:10]
    return f"{index:02d}:{knob}:{h}"


def config_key(cfg: Any, shown: Callable[[Any], dict] = sparse) -> str:
    return json.dumps(shown(cfg), sort_keys=True)


@dataclass
class TrialTime:
    """When a trial may start: its estimated wall time (what a trial of the same configuration
    took, else the median of the trials so far, else the caller's estimate) and the time it
    keeps for trials after it (a knob keeps a verify pair's) must fit before `deadline` (a
    `clock()` time). A verify pair of micro-batch 32 against 16 takes the two configurations'
    own times, not twice the median (measured: a best trial of 80 s against a 50 s median)."""

    deadline: float | None
    clock: Callable[[], float] = time.time
    first_estimate_s: float | None = None
    walls: list[float] = field(default_factory=list)
    by_config: dict[str, float] = field(default_factory=dict)
    reason: str = ""

    def estimate_s(self, key: str | None = None) -> float | None:
        if key in self.by_config:
            return self.by_config[key]
        return statistics.median(self.walls) if self.walls else self.first_estimate_s

    def record(self, key: str, wall_s: float, cut: bool) -> None:
        self.walls.append(wall_s)
        # a trial stopped at the deadline took at least this long
        self.by_config[key] = max(wall_s, self.by_config.get(key, 0.0)) if cut else wall_s

    def fits(self, key: str, keep: tuple[str | None, ...] = (), kept_for: str = "") -> bool:
        """Whether this trial and the ones it keeps time for fit in what is left; if not,
        `reason` says why."""
        if self.deadline is None:
            return True
        left, est = self.deadline - self.clock(), self.estimate_s(key)
        extra = sum(self.estimate_s(k) or 0.0 for k in keep)
        if left > 0 and (est is None or est + extra <= left):
            return True
        self.reason = (f"time budget spent: {max(0.0, left):.0f} s left"
                       + (f", this trial takes ~{est:.0f} s" if est is not None else "")
                       + (f" and {extra:.0f} s more are kept for {kept_for}" if extra and kept_for else ""))
        return False


def _takes_stop_at(runner: Runner) -> bool:
    try:
        return "stop_at" in inspect.signature(runner).parameters
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class LadderResult:
    """What `run_ladder` found, in tune.json's own Structs (recordtypes/tune.py) from the trial
    that made them to the file (tune/record.tune_document); the baselines are journal entries."""

    baseline: dict
    """the first baseline trial's journal entry"""
    trials: list[Trial] = field(default_factory=list)
    error: str | None = None
    """the baseline failed: nothing below was measured"""
    tolerance: Tolerance | None = None
    best_config: dict | None = None
    """shown (LadderConfig.shown): the baseline's when nothing was confirmed"""
    verify: Verify | None = None
    unconfirmed: Unconfirmed | None = None
    """knobs the trials kept but the verify pairs did not confirm (`command` filled by the record)"""
    min_speedup: float | None = None
    """the keep rule, 1 + min_gain"""


def run_ladder(runner: Runner, knobs: tuple[Knob, ...], base: Any, config: LadderConfig,
               journal: Journal) -> LadderResult:
    """The ladder of `knobs` from `base` under `config` (tune/ladder_config.py), its finished trials
    in `journal`. Time: every trial, the verify pairs included, starts only when it fits before
    `config.deadline` (default: now + `budget_s` − the wall time the journal already holds;
    neither: no time limit, every knob runs); a knob's trial also keeps one verify pair's time. A
    runner that takes `stop_at` gets the deadline and ends a trial that would pass it at a step
    boundary (`cut_short`): that trial is not journaled (a resume with more time runs it) and its
    knob is skipped. The first baseline trial always runs.

    Configurations are TrainConfigs by default; a program's (tune/program.py) sets `shown` (a
    configuration as tune.json shows it, what trial ids hash) and `rerun` (the baseline's second
    run; default: the next seed). A knob's `apply` may return a string: why it does not apply."""
    c, shown = config, config.shown
    deadline = c.deadline
    if deadline is None and c.budget_s is not None:
        deadline = c.clock() + c.budget_s - sum(e.get("wall_s", 0.0) for e in journal.entries.values())
    timing = TrialTime(deadline, c.clock, c.estimate_s)
    stop_kw = _takes_stop_at(runner)

    def trial(index: int, knob: str, cfg: Any, keep: tuple[Any, ...] = (),
              always: bool = False, kept_for: str = "") -> dict | None:
        seen = shown(cfg)
        tid, key = trial_id(index, knob, seen), config_key(cfg, shown)
        done = journal.get(tid)
        if done is not None:
            timing.record(key, done.get("wall_s", 0.0), False)
            if c.on_trial:
                c.on_trial(done)
            return done  # finished before a crash: never rerun
        if not always and not timing.fits(key, tuple(None if k is None else config_key(k, shown) for k in keep),
                                          kept_for):
            return None
        if c.on_begin:
            c.on_begin(knob)
        t0 = c.clock()
        r = runner(cfg, stop_at=timing.deadline) if stop_kw else runner(cfg)
        entry = {"trial_id": tid, "knob": knob, "config": seen, **entry_fields(r), "wall_s": c.clock() - t0}
        timing.record(key, entry["wall_s"], r.cut_short)
        if not r.cut_short:
            journal.append(entry)
        if c.on_trial:
            c.on_trial(entry)
        return entry

    base_a = trial(0, "baseline", base, always=True)
    if not base_a["ok"] or base_a.get("cut_short"):
        return LadderResult(base_a, error=f"the baseline failed: {base_a['reason']}")
    # the noise: the next seed of the reference workload, or the same program run again (its seed is its own)
    second, name = (replace(base, seed=base.seed + 1), "baseline_seed2") if c.rerun is None else (c.rerun(base),
                                                                                                "baseline_rerun")
    base_b = trial(0, name, second, keep=(None,) if knobs else (), kept_for="a knob's trial")
    both = base_b is not None and base_b["ok"] and not base_b.get("cut_short")
    tol = c.guard.calibrate(base_a, base_b) if both else c.guard.calibrate(base_a, base_a)
    if base_b is None:
        tol = structs.replace(tol, single_seed=True)  # no second seed in the budget: the floors only

    trials, current = _climb(trial, timing, knobs, base, base_a, tol, c)
    verify = _verify(trial, timing, base, current, c.verify_trials, len(knobs) + 1) if current != base else None
    best, verify, unconfirmed = _decide(base, current, verify, base_a, trials, c.min_gain, shown)
    return LadderResult(base_a, trials, tolerance=tol, best_config=shown(best), verify=verify,
                        unconfirmed=unconfirmed, min_speedup=1 + c.min_gain)


def _climb(trial: Callable, timing: TrialTime, knobs: tuple[Knob, ...], base: Any, base_a: dict,
           tol: Tolerance, c: LadderConfig) -> tuple[list[Trial], Any]:
    """One knob at a time on top of those kept; (the trials' rows, the configuration kept).
    A same-math knob must repeat the trajectory of the configuration it was applied to: the
    baseline's, or after a kept knob that changed what is learned (a bigger batch), that knob's
    trial (`ref`; the validation rule stays against the baseline)."""
    current, current_tps = base, base_a["tokens_per_s"]
    ref, ref_knob = base_a, None
    trials = []
    for i, knob in enumerate(knobs, start=1):
        cfg = knob.apply(current, c.device)
        row = {"knob": knob.name, "description": knob.description, "cost": knob.cost}
        if cfg is None or isinstance(cfg, str):
            trials.append(Trial(**row, accepted=False, reason=cfg or "does not apply here (or already set)",
                                skipped=True))
            continue
        # a knob's trial keeps time for one verify pair (a passed knob is worth little unconfirmed);
        # the other pairs run as time allows, where more knobs would not have fitted anyway
        e = trial(i, knob.name, cfg, keep=(base, cfg) if c.verify_trials else (), kept_for="a verify pair")
        if e is None or e.get("cut_short"):
            trials.append(Trial(**row, config=c.shown(cfg), accepted=False, skipped=True,
                                reason=timing.reason if e is None else e["reason"]))
            continue
        t = _measured(row, e, base_a, current_tps, tol, knob, ref, ref_knob, c)
        trials.append(t)
        if t.accepted:
            current, current_tps = cfg, e["tokens_per_s"]
            if not knob.same_math:
                ref, ref_knob = e, knob.name
    return trials, current


def _measured(row: dict, e: dict, base_a: dict, current_tps: float, tol: Tolerance, knob: Knob, ref: dict,
              ref_knob: str | None, c: LadderConfig) -> Trial:
    """The rung of a knob whose trial ran (`e`, its journal entry): its speed against the baseline
    and the best so far, the guard's verdict and evidence, and whether it is kept."""
    speedup = e["tokens_per_s"] / base_a["tokens_per_s"] if e["ok"] and base_a["tokens_per_s"] else None
    gain = e["tokens_per_s"] / current_tps if e["ok"] and current_tps else None
    acc_ok, why = c.guard.check(e, base_a, tol, knob.same_math, ref=ref) if e["ok"] else (False, None)
    evidence = c.guard.measure(e, base_a, ref) if e["ok"] else {"loss_deviation": None, "val_delta": None}
    if not e["ok"]:
        ok, reason = False, e["reason"]
    elif not acc_ok:
        ok, reason = False, why
    elif gain is not None and gain < 1 + c.min_gain:
        ok, reason = False, f"not faster: {gain:.3f}× the current best (needs ≥ {1 + c.min_gain:.2f}×)"
    else:
        ok, reason = True, None
    # absent, not null, where nothing was measured (tune.json as its dicts wrote it: UNSET)
    return Trial(**row, config=e["config"], ok=e["ok"], step_time_s=e["step_time_s"],
                 tokens_per_s=e["tokens_per_s"], speedup=speedup, step_gain=gain, mfu=e["mfu"],
                 peak_memory_bytes=e["peak_memory_bytes"], compile_s=e["compile_s"], val_loss=e["val_loss"],
                 **evidence, same_math=knob.same_math, accuracy_ok=acc_ok, accepted=ok, reason=reason, skipped=False,
                 tokens_per_step=e["tokens_per_step"] if e.get("tokens_per_step") else UNSET,
                 loss_reference=ref_knob or UNSET, notes=e["notes"] if e.get("notes") else UNSET)


def _decide(base: Any, current: Any, verify: Verify | None, base_a: dict, trials: list[Trial], min_gain: float,
            shown: Callable[[Any], dict] = sparse) -> tuple[Any, Verify | None, Unconfirmed | None]:
    """The best configuration after the verify pairs, the pairs with the baseline's spread (and
    verdict), and what they did not confirm."""
    best, unconfirmed = current, None
    accepted = [t.knob for t in trials if t.accepted]
    if verify is not None:
        spread = baseline_spread(base_a, verify)
        verify = structs.replace(verify, baseline_spread=spread)
        if spread is not None and spread > UNSTABLE_SPREAD:
            # The baseline disagrees with itself by more than any knob could win: something else
            # competed for the machine, and a ratio against such a baseline proves nothing.
            verify = structs.replace(verify, verdict="unstable machine")
            best = base
            unconfirmed = Unconfirmed(config=shown(current), knobs=accepted, reason=(
                f"unstable machine: the baseline's re-runs spread {spread:.2f}× in tokens/s "
                f"(max/min of {1 + len(verify.pairs)} runs; above {UNSTABLE_SPREAD:.1f}× "
                "no speed-up is claimed); rerun tune on a quiet machine"))
    if unconfirmed is None and verify and verify.speedup_median is not None \
            and verify.speedup_median < 1 + min_gain:
        # Single trials on a shared machine can be lucky; the alternating pairs are the better
        # measurement. A combination they do not confirm is not "measurably faster": keep the baseline.
        best = base
        unconfirmed = Unconfirmed(config=shown(current), knobs=accepted, reason=(
            f"the knobs that passed their trials measured {verify.speedup_median:.2f}× the baseline in "
            f"{len(verify.pairs)} alternating pairs (needs ≥ {1 + min_gain:.2f}×)"))
    return best, verify, unconfirmed


# Re-runs of one configuration on a quiet machine agree within a few per cent (two
# baselines and the verify pairs on our 2-core CI box: within ~15%). A max/min above
# 1.5 means the machine was busy with something else for part of the tune (issue #19: two
# of three re-runs ran 4.7x slower than the first, and a 7.09x "speed-up" was reported).
UNSTABLE_SPREAD = 1.5


def baseline_spread(base_a: dict, verify: Verify) -> float | None:
    """max/min tokens/s over the first baseline and the verify step's baseline re-runs."""
    tps = [base_a["tokens_per_s"]] if base_a.get("ok") else []
    tps += [p.base_tokens_per_s for p in verify.pairs]
    tps = [x for x in tps if x and x > 0]
    return max(tps) / min(tps) if len(tps) >= 2 else None


def _verify(trial: Callable, timing: TrialTime, base: Any, best: Any, n: int, index: int) -> Verify:
    """Best vs baseline, alternating (drift hits both), median of the per-pair ratios; pairs
    that do not fit in the time left are not run (`skipped_pairs`, `skipped_reason`)."""
    ratios, pairs, skipped = [], [], 0
    for k in range(n):
        order = [("base", base), ("best", best)] if k % 2 == 0 else [("best", best), ("base", base)]
        got = {}
        for j, (name, cfg) in enumerate(order):
            e = trial(index + k, f"verify_{name}_{k}", cfg, keep=(order[1][1],) if j == 0 else (),
                      kept_for="the pair's other half")
            if e is None or e.get("cut_short"):
                break
            got[name] = e
        if len(got) < 2:
            skipped = n - k
            break
        if got["base"]["ok"] and got["best"]["ok"] and got["base"]["tokens_per_s"]:
            r = got["best"]["tokens_per_s"] / got["base"]["tokens_per_s"]
            ratios.append(r)
            pairs.append(VerifyPair(base_tokens_per_s=got["base"]["tokens_per_s"],
                                    best_tokens_per_s=got["best"]["tokens_per_s"], ratio=r))
    left_out = {"skipped_pairs": skipped, "skipped_reason": timing.reason or "a trial was stopped at the deadline"}
    return Verify(pairs=pairs, speedup_median=statistics.median(ratios) if ratios else None,
                  speedup_min=min(ratios) if ratios else None, speedup_max=max(ratios) if ratios else None,
                  **(left_out if skipped else {}))
