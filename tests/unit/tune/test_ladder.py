"""The ladder engine, guard and journal with a scripted runner (no training: exact and fast)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from trainprof.recordtypes.base import known
from trainprof.recordtypes.tune import Tolerance
from trainprof.tune import Guard, Knob, LadderConfig, TrialResult, run_ladder
from trainprof.tune.catalogue import KNOBS, by_name
from trainprof.tune.journal import Journal
from trainprof.tune.reference import command, sparse, to_argv
from trainprof.workload.config import TrainConfig

BASE = TrainConfig(preset="tiny", device="cpu", micro_batch=4, seq_len=32, dtype="fp32", seed=1).resolved()
LOSSES = [5.5, 4.8, 4.2, 3.9, 3.7]
# Scripted knobs set real TrainConfig fields (a knob returns a new config): which field stands
# for which behaviour in these tests
FAST, SLOW, WRONG_LR, TINY_GAIN, FAST2 = "compile", "pad_vocab", "gc_disable", "non_blocking", "tf32"


def ladder(runner, knobs, journal, **config):
    """run_ladder from BASE on the CPU, its settings a LadderConfig of `config`."""
    return run_ladder(runner, knobs, BASE, LadderConfig(device="cpu", **config), Journal(journal))


def knob(name: str, same_math: bool = True, **set_) -> Knob:
    return Knob(name, name, lambda c, d: dataclasses.replace(c, **set_), same_math=same_math, cost="")


class Scripted:
    """tokens/s and losses per config, keyed by the boolean fields a knob set; counts the calls."""

    def __init__(self, table: dict) -> None:
        self.table = table
        self.calls: list[TrainConfig] = []

    def __call__(self, cfg: TrainConfig) -> TrialResult:
        self.calls.append(cfg)
        tps, losses, val = 1000.0, list(LOSSES), 3.6
        if cfg.seed == 2:  # the second baseline seed: the noise the guard calibrates on
            losses, val = [x + 0.05 for x in LOSSES], 3.62
        for key, (t, dl, dv) in self.table.items():
            if getattr(cfg, key):
                tps *= t
                losses = [x + dl for x in losses]
                val += dv
        return TrialResult(ok=True, losses=losses, val_loss=val, tokens_per_s=tps, step_time_s=1 / tps, mfu=0.1)


def test_faster_accurate_knobs_kept_slower_or_inaccurate_rejected(tmp_path):
    runner = Scripted({FAST: (1.5, 0.0, 0.0), SLOW: (0.7, 0.0, 0.0), WRONG_LR: (1.2, 0.8, 0.5),
                       TINY_GAIN: (1.01, 0.0, 0.0), FAST2: (1.2, 0.001, 0.0)})
    knobs = (knob("fast", **{FAST: True}), knob("slow", **{SLOW: True}), knob("wrong_lr", **{WRONG_LR: True}),
             knob("tiny_gain", **{TINY_GAIN: True}), knob("fast2", **{FAST2: True}))
    r = ladder(runner, knobs, tmp_path / "j.jsonl", verify_trials=3)
    t = {x.knob: x for x in r.trials}
    assert t["fast"].accepted and t["fast"].speedup == pytest.approx(1.5)
    assert not t["slow"].accepted and "not faster" in t["slow"].reason
    assert not t["wrong_lr"].accepted and "trajectory" in t["wrong_lr"].reason
    assert not t["tiny_gain"].accepted  # 1% is below the 3% needed
    assert t["fast2"].accepted and t["fast2"].speedup == pytest.approx(1.8)
    # best_config is the sparse dict: the pinned fields + what the kept knobs changed
    assert r.best_config == {**sparse(BASE), FAST: True, FAST2: True}
    assert r.verify.speedup_median == pytest.approx(1.8) and len(r.verify.pairs) == 3
    # the guard's evidence is kept beside its verdict: wrong_lr moved every loss by 0.8, val by 0.5
    assert t["wrong_lr"].loss_deviation == pytest.approx(0.8) and t["wrong_lr"].val_delta == pytest.approx(0.5)
    assert t["fast"].loss_deviation == 0.0 and t["fast2"].loss_deviation == pytest.approx(0.001)
    assert t["fast2"].step_gain == pytest.approx(1.2)  # over the best so far (fast), not the baseline
    # calibrated from the seed noise: trajectory 0.05, val 2 × 0.02 → floors 0.05 / 0.04
    assert r.tolerance.trajectory_tol == pytest.approx(0.05)
    assert r.tolerance.val_tol == pytest.approx(0.04)
    # the keep rule is a number of the record, not only text in the reasons (report.md quotes it)
    assert r.min_speedup == pytest.approx(1.03)
    from trainprof.tune.record import tune_document

    assert tune_document(sparse(BASE), r).min_speedup == pytest.approx(1.03)


def test_guard_by_hand():
    g = Guard()
    base = {"losses": [5.0, 4.0], "val_loss": 3.0}
    tol = g.calibrate(base, {"losses": [5.1, 4.1], "val_loss": 3.05})
    assert type(tol) is Tolerance and not known(tol.single_seed)  # tune.json's own Struct, no second-seed flag
    assert (tol.trajectory_tol, tol.val_tol, tol.seed_trajectory_noise, tol.seed_val_noise) == (
        pytest.approx(0.1), pytest.approx(0.1), pytest.approx(0.1), pytest.approx(0.05))
    assert g.check({"losses": [5.05, 4.05], "val_loss": 3.05}, base, tol, True) == (True, None)
    ok, why = g.check({"losses": [5.3, 4.3], "val_loss": 3.0}, base, tol, True)
    assert not ok and "trajectory" in why
    assert g.check({"losses": [5.3, 4.3], "val_loss": 3.0}, base, tol, False)[0]  # batch knobs: val only
    ok, why = g.check({"losses": [5.0, 4.0], "val_loss": 3.2}, base, tol, False)
    assert not ok and "validation" in why
    assert g.check({"losses": [5.0, math.nan], "val_loss": 3.0}, base, tol, True) == (False, "non-finite loss")


def test_failed_trial_is_rejected_with_its_reason(tmp_path):
    def runner(cfg):
        if cfg.micro_batch == 4096:
            return TrialResult(ok=False, reason="--micro-batch 4096 does not fit in cuda memory")
        return Scripted({})(cfg)

    r = ladder(runner, (knob("huge", micro_batch=4096),), tmp_path / "j")
    (t,) = r.trials
    assert not t.accepted and "does not fit" in t.reason and r.verify is None


def test_resume_never_reruns_a_finished_trial(tmp_path):
    knobs = (knob("a", compile=True), knob("b", pad_vocab=True), knob("c", tf32=True))
    table = {"compile": (1.2, 0, 0), "pad_vocab": (0.9, 0, 0), "tf32": (1.1, 0, 0)}

    class Crash(Exception):
        pass

    first = Scripted(table)

    def crashing(cfg):
        if len(first.calls) == 3:  # baseline, baseline_seed2, a: then the machine dies
            raise Crash
        return first(cfg)

    with pytest.raises(Crash):
        ladder(crashing, knobs, tmp_path / "j.jsonl", verify_trials=1)
    assert len((tmp_path / "j.jsonl").read_text().splitlines()) == 3
    second = Scripted(table)
    r = ladder(second, knobs, tmp_path / "j.jsonl", verify_trials=1)
    # the baselines and knob a came from the journal: the first new trial is b
    assert second.calls[0].pad_vocab and len(second.calls) == 2 + 2  # b, c, then one verify pair
    assert [t.knob for t in r.trials if t.accepted] == ["a", "c"]
    lines = [json.loads(x) for x in (tmp_path / "j.jsonl").read_text().splitlines()]
    assert len({x["trial_id"] for x in lines}) == len(lines)  # nothing journalled twice


def test_a_lucky_trial_the_verify_pairs_do_not_confirm_is_not_kept(tmp_path):
    """Knob "lucky" measured 1.3× in its single trial but 1.0× in every verify pair: noise."""
    calls = {"n": 0}

    def runner(cfg):
        calls["n"] += 1
        r = Scripted({})(cfg)
        if cfg.compile and calls["n"] == 3:  # the ladder trial only (baseline, seed2, then it)
            r.tokens_per_s *= 1.3
        return r

    r = ladder(runner, (knob("lucky", compile=True),), tmp_path / "j", verify_trials=3)
    assert r.trials[0].accepted and r.verify.speedup_median == pytest.approx(1.0)
    assert r.best_config == sparse(BASE) and r.unconfirmed.knobs == ["lucky"]
    assert r.unconfirmed.config == {**sparse(BASE), "compile": True}
    assert "1.00× the baseline in 3 alternating pairs (needs ≥ 1.03×)" in r.unconfirmed.reason
    # a confirmed combination stays: nothing unconfirmed
    ok = ladder(Scripted({"tf32": (1.5, 0, 0)}), (knob("a", tf32=True),), tmp_path / "j2", verify_trials=1)
    assert ok.best_config["tf32"] and ok.unconfirmed is None


def test_torn_last_line_is_ignored(tmp_path):
    p = tmp_path / "j.jsonl"
    whole = ('{"trial_id": "00:baseline:x", "knob": "baseline", "config": {}, "ok": true, "tokens_per_s": 10.0, '
             '"step_time_s": 0.1, "losses": [2.0, null]}')
    p.write_text(whole + '\n{"trial_id": "01:a:')
    j = Journal(p)
    assert list(j.entries) == ["00:baseline:x"]


@pytest.mark.parametrize("line, field", [
    ('{"trial_id": "00:b:x", "ok": true}', "knob"),
    ('{"trial_id": "00:b:x", "knob": "b", "config": {}, "ok": true, "tokens_per_s": null, "step_time_s": 1, '
     '"losses": []}', "tokens_per_s"),
])
def test_ill_typed_journal_entry_is_one_line(tmp_path, line, field):
    from trainprof.errors import InputError

    p = tmp_path / "j.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(InputError) as e:
        Journal(p)
    assert str(p) in str(e.value) and field in str(e.value) and "\n" not in str(e.value)


def test_budget_stops_new_trials(tmp_path):
    r = ladder(Scripted({"tf32": (2, 0, 0)}), (knob("a", tf32=True),), tmp_path / "j", budget_s=0.0)
    assert r.trials[0].reason.startswith("time budget spent") and r.trials[0].skipped


def test_catalogue_applies_and_reproduces():
    names = [k.name for k in KNOBS]
    # the seed's order, the batch's two knobs first
    assert names[:5] == ["batch_size", "grad_accum_speed", "dataloader_workers", "non_blocking", "compile"]
    cfg = TrainConfig(micro_batch=8, dtype="fp32", optimizer="foreach").resolved()
    (nb, fp16, tf32) = by_name(["non_blocking", "fp16", "tf32"])
    assert nb.apply(cfg, "cpu") is None and fp16.apply(cfg, "cpu") is None and tf32.apply(cfg, "cpu") is None
    assert nb.apply(cfg, "cuda").pin_memory and tf32.apply(cfg, "cuda").tf32
    assert by_name(["batch_size"])[0].apply(cfg, "cpu").micro_batch == 16
    assert by_name(["fused_adamw"])[0].apply(dataclasses.replace(cfg, optimizer="fused"), "cpu") is None  # already set
    # micro-batch 8 → 4, accumulation 1 → 2: the same 8 sequences per optimizer step
    ga = by_name(["grad_accumulation"])[0].apply(cfg, "cpu")
    assert (ga.micro_batch, ga.grad_accum) == (4, 2)
    assert to_argv({"compile": True, "micro_batch": 8, "pad_vocab": False}) == [
        "--compile", "--micro-batch", "8", "--no-pad-vocab"]
    assert command({"preset": "tiny"}) == "trainprof run --preset tiny"
    with pytest.raises(Exception, match="unknown"):
        by_name(["warp_drive"])


class Noisy(Scripted):
    """The baseline config slows down 4.7x after its first run (a busy machine)."""

    def __call__(self, cfg: TrainConfig) -> TrialResult:
        r = super().__call__(cfg)
        if not getattr(cfg, FAST) and cfg.seed == 1:
            self.base_runs = getattr(self, "base_runs", 0) + 1
            if self.base_runs > 1:
                r.tokens_per_s /= 4.7
                r.step_time_s *= 4.7
        return r


def test_unstable_baseline_claims_no_speed_up(tmp_path):
    # baseline 1000 tok/s once, then 1000/4.7 = 212.8 in the verify re-runs: spread 4.7 > 1.5,
    # so the 1.5 x 4.7 = 7.05x "speed-up" of the verify pairs is not claimed
    r = ladder(Noisy({FAST: (1.5, 0.0, 0.0)}), (knob("fast", **{FAST: True}),), tmp_path / "j.jsonl",
               verify_trials=3)
    assert r.verify.baseline_spread == pytest.approx(4.7)
    assert r.verify.speedup_median == pytest.approx(1.5 * 4.7)
    assert r.verify.verdict == "unstable machine"
    assert r.best_config == sparse(BASE) and "unstable machine" in r.unconfirmed.reason


def test_stable_baseline_keeps_the_speed_up(tmp_path):
    r = ladder(Scripted({FAST: (1.5, 0.0, 0.0)}), (knob("fast", **{FAST: True}),), tmp_path / "j.jsonl",
               verify_trials=3)
    assert r.verify.baseline_spread == pytest.approx(1.0) and not known(r.verify.verdict)
    assert r.best_config[FAST] and r.unconfirmed is None


def test_a_deadline_starts_a_trial_only_when_it_fits_and_a_cut_trial_is_not_journaled(tmp_path):
    """Trials of 10 s on a fake clock, deadline at 75 s, one verify pair (a knob keeps 2 trials for it)."""
    clock = [0.0]
    script = Scripted({FAST: (1.5, 0.0, 0.0)})

    def runner(cfg, stop_at=None):
        took = 50.0 if cfg.tf32 else 10.0  # b starts slowly: the runner stops it at the deadline
        if clock[0] + took > stop_at:
            clock[0] = stop_at
            return TrialResult(ok=False, cut_short=True, reason="time budget spent: stopped at the deadline")
        clock[0] += took
        return script(cfg)

    knobs = (knob("a", **{FAST: True}), knob("b", tf32=True), knob("c", pad_vocab=True))
    j = tmp_path / "j.jsonl"
    r = ladder(runner, knobs, j, verify_trials=1, deadline=75.0, clock=lambda: clock[0])
    t = {x.knob: x for x in r.trials}
    # baseline 0→10, seed 2 (2·10 ≤ 65) 10→20, a (3·10 ≤ 55) 20→30 kept, b (3·10 ≤ 45) 30→75: cut
    assert t["a"].accepted and t["b"].skipped and "stopped at the deadline" in t["b"].reason
    # c: nothing left; an unknown config takes the median, 10 s (10, 10, 10, 45), and a knob
    # keeps a verify pair's time: the baseline's 10 s and its own 10 s
    assert t["c"].reason == ("time budget spent: 0 s left, this trial takes ~10 s and 20 s more are kept for "
                                "a verify pair")
    assert r.verify.pairs == [] and r.verify.skipped_pairs == 1
    assert [json.loads(x)["knob"] for x in j.read_text().splitlines()] == ["baseline", "baseline_seed2", "a"]
    # a resume with more time: the journaled trials are replayed, b, c and the pair run
    script.calls.clear()
    r = ladder(runner, knobs, j, verify_trials=1, deadline=500.0, clock=lambda: clock[0])
    assert len(script.calls) == 2 + 2 and not any(x.skipped for x in r.trials[1:])
    assert len(r.verify.pairs) == 1


def test_a_verify_pair_is_estimated_from_its_own_configurations(tmp_path):
    """Baseline trials take 10 s, the kept knob's (twice the tokens per step) 30 s: with 35 s
    left the pair needs 10 + 30 = 40 s, not twice the 10 s median, so it is not started."""
    clock = [0.0]
    script = Scripted({FAST: (1.5, 0.0, 0.0)})

    def runner(cfg, stop_at=None):
        clock[0] += 30.0 if getattr(cfg, FAST) else 10.0
        return script(cfg)

    j = tmp_path / "j.jsonl"
    # 0→10, 10→20, big (10 + the pair's 10 + 10 ≤ 65) 20→50; pair: 85 − 50 = 35 < 10 + 30
    r = ladder(runner, (knob("big", **{FAST: True}),), j, verify_trials=1, deadline=85.0, clock=lambda: clock[0])
    assert r.trials[0].accepted and len(script.calls) == 3
    assert r.verify.skipped_pairs == 1 and "this trial takes ~10 s and 30 s more are kept for the pair's " \
        "other half" in r.verify.skipped_reason


# ---- like with like: tokens per step (issue #41) -----------------------------------------
def test_trajectories_compare_at_the_same_tokens_seen():
    from trainprof.tune.guard import per_tokens

    # the baseline's steps 0,1 saw the micro-batches the 2x-accumulation trial's step 0 saw:
    # base [5, 4, 3, 2, 1, 0] grouped by 2 → [4.5, 2.5, 0.5], the trial's own losses
    base = {"losses": [5.0, 4.0, 3.0, 2.0, 1.0, 0.0], "val_loss": 1.0, "tokens_per_step": 64}
    trial = {"losses": [4.5, 2.5, 0.5], "val_loss": 1.0, "tokens_per_step": 128}
    assert per_tokens(trial, base) == ([4.5, 2.5, 0.5], [4.5, 2.5, 0.5])
    assert per_tokens(base, trial) == ([4.5, 2.5, 0.5], [4.5, 2.5, 0.5])  # either side
    assert Guard.measure(trial, base)["loss_deviation"] == 0.0
    # step by step it would have read |4.5−5| + |2.5−4| + |0.5−3| over 3 = 1.5
    assert Guard.measure({**trial, "tokens_per_step": 0}, base)["loss_deviation"] == pytest.approx(1.5)
    # an incomplete last group is left out; a ratio that is not whole compares as it is
    assert per_tokens({**trial, "losses": [4.5]}, {**base, "losses": [5.0, 4.0, 3.0]})[1] == [4.5]
    assert per_tokens({**trial, "tokens_per_step": 96}, base)[1] == base["losses"]


def test_grad_accum_speed_keeps_the_micro_batch_and_the_tokens():
    (k,) = by_name(["grad_accum_speed"])
    assert k.speed and not k.same_math and k in KNOBS
    cfg = TrainConfig(micro_batch=8, seq_len=32, steps=10, warmup_steps=2, dtype="fp32").resolved()
    t = k.apply(cfg, "cpu")
    assert (t.micro_batch, t.grad_accum, t.steps) == (8, 2, 5)
    assert t.tokens_per_step == 2 * cfg.tokens_per_step  # K× the tokens per optimizer step
    assert t.steps * t.tokens_per_step == cfg.steps * cfg.tokens_per_step  # the same tokens seen
    assert "multiple of 2" in k.apply(dataclasses.replace(cfg, steps=9), "cpu")
    assert "no measured step" in k.apply(dataclasses.replace(cfg, steps=4), "cpu")
    names = [x.name for x in KNOBS]
    assert names.index("grad_accum_speed") == names.index("batch_size") + 1  # the batch knobs first


def test_same_math_knob_after_a_kept_batch_knob_repeats_that_trial(tmp_path):
    # A kept knob that changes what is learned (+0.5 on every loss) becomes the trajectory the
    # next same-math knob must repeat: FAST, which adds nothing more, is within tolerance of it
    # (0.0), though 0.5 from the baseline's (tolerance 0.05, the seed noise: rejected before).
    runner = Scripted({SLOW: (1.5, 0.5, 0.0), FAST: (1.2, 0.0, 0.0)})
    r = ladder(runner, (knob("batch", same_math=False, **{SLOW: True}), knob("fast", **{FAST: True})),
               tmp_path / "j.jsonl", verify_trials=0)
    batch, fast = r.trials
    assert batch.accepted and not known(batch.loss_reference) and batch.loss_deviation == pytest.approx(0.5)
    assert fast.accepted and fast.loss_reference == "batch" and fast.loss_deviation == pytest.approx(0.0)
