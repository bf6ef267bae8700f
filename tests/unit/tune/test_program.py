"""`trainprof tune -- COMMAND` without running a program: the command line rewritten per trial,
which knobs apply (and why not), the patches printed, the guard's rule on the program's loss,
and a trial's throughput read from its run.json."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from trainprof.cli import _dash_values
from trainprof.errors import UsageError
from trainprof.jobs.tune_program import failure, program_result, queue
from trainprof.knobs import Knobs
from trainprof.tune.guard import ProgramGuard
from trainprof.recordtypes.run_parts import Profile
from trainprof.tune.patches import patch
from trainprof.tune.program import (Facts, ProgramConfig, again, current_arg, from_shown, parse_arg_knob,
                                    parse_env_knob, program_knobs, rewrite, shown, user_knobs)

CPU = Facts(device="cpu", loaders=1, loader={"num_workers": 0, "pin_memory": False, "prefetch_factor": None},
            optimizer="AdamW (for-loop, torch's default off CUDA)", dtype="fp32", threads=1, roots=("Net",))


def test_the_command_line_is_rewritten_per_trial():
    assert parse_arg_knob("--batch-size=32,64, 128") == ("--batch-size", ("32", "64", "128"))
    assert parse_env_knob("OMP_NUM_THREADS=1,2") == ("OMP_NUM_THREADS", ("1", "2"))
    for bad in ("batch-size=32", "--batch-size", "--batch-size="):
        with pytest.raises(UsageError, match="--arg-knob"):
            parse_arg_knob(bad)
    with pytest.raises(UsageError, match="--env-knob"):
        parse_env_knob("1X=2")
    argv = ["python", "train.py", "--batch-size", "16", "--lr=0.1"]
    assert current_arg(argv, "--batch-size") == "16" and current_arg(argv, "--lr") == "0.1"
    assert current_arg(argv, "--epochs") is None
    assert rewrite(argv, (("--batch-size", "64"), ("--lr", "1"), ("--epochs", "2"))) == \
        ["python", "train.py", "--batch-size", "64", "--lr=1", "--epochs", "2"]
    # the cli reads `--arg-knob --batch-size=32` (a value that looks like a flag); the command after -- is untouched
    assert _dash_values(["tune", "--arg-knob", "--bs=1", "--", "x", "--arg-knob", "--y"]) == \
        ["tune", "--arg-knob=--bs=1", "--", "x", "--arg-knob", "--y"]


def test_configs_are_shown_sparse_and_come_back():
    base = ProgramConfig()
    assert shown(base) == {} and shown(again(base)) == {"repeat": 1}
    cfg = base.with_knobs(num_workers=2, persistent_workers=True).with_arg("--bs", "8").with_arg("--bs", "16")
    assert shown(cfg) == {"num_workers": 2, "persistent_workers": True, "args": {"--bs": "16"}}
    assert from_shown(shown(cfg)) == cfg


def test_each_knob_applies_only_where_it_can_and_says_why_not():
    base = ProgramConfig()
    reasons = {k.name: k.apply(base, None) for k in program_knobs(CPU, None)}
    assert reasons["dataloader_workers"].knobs.num_workers >= 2
    assert reasons["fused_optimizer"].knobs.optimizer == "fused"
    assert reasons["bf16"].knobs.autocast == "bf16"
    for name in ("pin_memory", "tf32", "cudnn_benchmark", "cuda_alloc_conf", "fp16"):
        assert isinstance(reasons[name], str) and "cpu" in reasons[name], name
    assert "no workers" in reasons["prefetch_factor"]  # prefetching is the workers'
    none = Facts(device="cpu", optimizer="AdamW (fused)", roots=(), threads=99)
    why = {k.name: k.apply(base, None) for k in program_knobs(none, ("dataloader_workers", "fused_optimizer", "compile"))}
    assert why == {"dataloader_workers": "no DataLoader in the program (the baseline iterated none)",
                   "fused_optimizer": "the program's AdamW is already fused",
                   "compile": "no model found (no module with trainable parameters ran in a training forward)"}
    custom = Facts(optimizer="Lion (for-loop, torch's default off CUDA)")
    assert "not a torch.optim optimizer" in program_knobs(custom, ("fused_optimizer",))[0].apply(base, None)
    assert program_knobs(CPU, ()) == ()


def test_a_users_values_are_rungs_and_the_current_one_is_skipped():
    rungs = user_knobs(["python", "t.py", "--batch-size", "8"], ("--batch-size=8,32",), ("MODE=a",))
    assert [k.name for k in rungs] == ["--batch-size=8", "--batch-size=32", "MODE=a"]
    assert not any(k.same_math for k in rungs)  # they may change what is learned
    assert rungs[0].apply(ProgramConfig(), None) == "the command already runs with --batch-size 8"
    assert rungs[1].apply(ProgramConfig(), None).args == (("--batch-size", "32"),)
    assert rungs[2].apply(ProgramConfig(), None).env == (("MODE", "a"),)


def test_patches_name_the_line_and_what_they_replace():
    notes = {"knobs": {"applied": [
        {"knob": "dataloader", "object": "DataLoader", "site": "train.py:30",
         "set": {"num_workers": 4, "persistent_workers": True}, "overrode": {"num_workers": 0}},
        {"knob": "optimizer", "object": "AdamW", "site": "train.py:22", "set": {"fused": True},
         "overrode": {"foreach": False}},
        {"knob": "autocast", "object": "Net", "site": None, "set": {"device_type": "cpu", "dtype": "torch.bfloat16"}}],
        "forward_site": "train.py:41", "threads_asked_by_program": [{"site": "train.py:5", "value": 1}]}}
    assert patch("dataloader_workers", {}, notes, []) == \
        ["train.py:30: DataLoader(..., num_workers=4, persistent_workers=True)  # instead of num_workers=0"]
    assert patch("fused_optimizer", {}, notes, []) == ["train.py:22: AdamW(..., fused=True)  # instead of foreach=False"]
    assert patch("bf16", {}, notes, [])[0] == \
        "train.py:41: with torch.autocast('cpu', dtype=torch.bfloat16): out = model(...)"
    assert patch("threads", {"threads": 2}, notes, []) == \
        ["train.py:5: torch.set_num_threads(2)  # instead of torch.set_num_threads(1)"]
    assert patch("--batch-size=64", {}, None, ["python", "t.py", "--batch-size", "16"]) == \
        ["run with --batch-size 64 (instead of --batch-size 16)"]
    assert patch("OMP_NUM_THREADS=2", {}, None, []) == ["export OMP_NUM_THREADS=2  # before starting the program"]


def test_the_guard_on_the_programs_loss():
    g = ProgramGuard()
    base = {"losses": [2.0, 1.0, 1.0, 1.0]}  # mean |loss| 1.25
    exact = g.calibrate(base, dict(base))
    # a seeded program repeats exactly: the floor, 2% of the mean loss, is the tolerance
    assert exact.seed_trajectory_noise == 0 and exact.trajectory_tol == pytest.approx(0.025)
    assert "repeated exactly" in exact.rule and exact.changed_tol == pytest.approx(0.125)
    noisy = g.calibrate(base, {"losses": [2.1, 1.1, 1.1, 1.1]})  # run-to-run noise 0.1 > the floor
    assert noisy.trajectory_tol == pytest.approx(0.1) and "noise" in noisy.rule
    assert g.check({"losses": [2.01, 1.0, 1.01, 1.0]}, base, exact, same_math=True) == (True, None)
    ok, why = g.check({"losses": [2.1, 1.1, 1.0, 1.0]}, base, exact, same_math=True)  # mean |Δ| 0.05 > 0.025
    assert not ok and "trajectory moved 0.05" in why
    assert g.check({"losses": [1.0, 1.0, 1.1, 1.3]}, base, exact, same_math=False) == (True, None)  # learns as well
    ok, why = g.check({"losses": [3.0, 3.0, 3.0, 3.0]}, base, exact, same_math=False)
    assert not ok and why.startswith("learns worse")
    assert g.check({"losses": [1.0, float("nan")]}, base, exact, same_math=False) == (False, "non-finite loss")


def _run(times: list[float], tokens: int, complete: bool = True, knobs: dict | None = None):
    steps = [SimpleNamespace(step=3 + i, step_time_s=t, tokens=tokens, loss=1.0, data_s=0.0) for i, t in enumerate(times)]
    summary = SimpleNamespace(step_time_median_s=sorted(times)[len(times) // 2], tokens_per_step=tokens, mfu=None,
                              peak_memory_bytes=None)
    return SimpleNamespace(steps=steps, summary=summary, config={"device": "cpu"}, environment={},
                           device=SimpleNamespace(peak_tflops=None, peak_dtype="fp32"),
                           profile=Profile(window_complete=complete, steps_seen=9, batch_unit="samples", knobs=knobs))


def test_a_trials_speed_is_per_item_over_the_steady_steps():
    # 2 workers × prefetch 2: 4 batches were waiting; the steady steps alternate 1 ms / 19 ms
    assert queue(ProgramConfig().with_knobs(num_workers=2), CPU) == 4 and queue(ProgramConfig(), CPU) == 0
    r = program_result(_run([0.001] * 4 + [0.001, 0.019, 0.001, 0.019], 16), needed=12, drain=4)
    assert r.ok and r.step_time_s == pytest.approx(0.010)  # the mean: the median would say 1 or 19 ms
    assert r.tokens_per_s == pytest.approx(16 / 0.010) and len(r.losses) == 8
    assert not program_result(_run([0.01], 16, complete=False), needed=8).ok
    missing = {"asked": {"autocast": "fp16"}, "applied": [], "not_applied": {"autocast": "no GradScaler"}}
    r = program_result(_run([0.01, 0.01], 4, knobs=missing), needed=8)
    assert not r.ok and r.reason == "not applied: autocast: no GradScaler"


def test_a_failed_trial_says_why_in_one_line():
    err = "Traceback (most recent call last):\n  File \"t.py\", line 3\nRuntimeError: CUDA out of memory\n"
    assert failure(err, 1) == "the program failed (exit code 1): RuntimeError: CUDA out of memory"
    assert failure("trainprof: the program never called optimizer.step()\n", 0) == \
        "the program never called optimizer.step()"
    assert failure("", 3) == "the program exited with code 3"


def test_knobs_refuse_nonsense():
    with pytest.raises(Exception, match="num_workers"):
        Knobs(num_workers=-1)
    assert Knobs().set() == {} and Knobs(compile=True).model
