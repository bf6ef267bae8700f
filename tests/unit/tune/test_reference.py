"""A trial's config: TrainConfig edits → the sparse dict tune.json shows → `trainprof run` flags → back."""

from __future__ import annotations

import argparse
import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from trainprof.flags import add_flags, build
from trainprof.tune.catalogue import by_name
from trainprof.tune.ladder import trial_id
from trainprof.tune.reference import changed, command, from_sparse, sparse, to_argv
from trainprof.workload.config import TrainConfig

# the baseline of `trainprof tune --device cpu --micro-batch 2 --seq-len 32 --steps 5 --warmup-steps 1
# --eval-batches 1` (tune's own dtype default: fp32)
BASE = TrainConfig(device="cpu", micro_batch=2, seq_len=32, dtype="fp32", steps=5, warmup_steps=1,
                   eval_batches=1).resolved()
BASE_SHOWN = {"preset": "tiny", "micro_batch": 2, "seq_len": 32, "dtype": "fp32", "attention": "sdpa",
              "optimizer": "foreach", "seed": 1337, "steps": 5, "warmup_steps": 1, "eval_batches": 1,
              "device": "cpu"}


def _parse(argv: list[str]) -> TrainConfig:
    """`trainprof run`'s parsing of its workload flags (the same generated flags)."""
    p = argparse.ArgumentParser()
    add_flags(p, TrainConfig)
    return build(TrainConfig, p.parse_args(argv)).resolved()


def test_the_baseline_shows_its_pinned_fields_in_tune_json_order():
    # lr is resolved to the tiny preset's 3e-3 but not shown: `trainprof run` would pick it too
    assert BASE.lr == 3e-3
    assert sparse(BASE) == BASE_SHOWN and list(sparse(BASE)) == list(BASE_SHOWN)  # device last, no data


def test_knob_edits_are_the_difference_of_two_configs():
    cfg = by_name(["gc_disable"])[0].apply(BASE, "cpu")
    cfg = by_name(["bf16"])[0].apply(cfg, "cpu")
    assert changed(BASE, cfg) == {"dtype": "bf16", "gc_disable": True}
    # dtype is pinned (shown in place), gc_disable is what a knob changed (appended)
    assert sparse(cfg) == {**BASE_SHOWN, "dtype": "bf16", "gc_disable": True}
    assert list(sparse(cfg))[-1] == "gc_disable"
    # sorted flags; bools spelled out, values as `trainprof run` parses them
    assert to_argv(cfg) == ["--attention", "sdpa", "--device", "cpu", "--dtype", "bf16", "--eval-batches", "1",
                            "--gc-disable", "--micro-batch", "2", "--optimizer", "foreach", "--preset", "tiny",
                            "--seed", "1337", "--seq-len", "32", "--steps", "5", "--warmup-steps", "1"]
    assert command(cfg) == "trainprof run " + " ".join(to_argv(cfg))
    # and back: the flags give the same config, and so does the sparse dict
    assert _parse(to_argv(cfg)) == cfg and from_sparse(sparse(cfg)) == cfg


def test_a_knob_setting_a_default_value_adds_nothing():
    # dataloader_workers on CPU sets num_workers and pin_memory=False; False is already the
    # default, so only num_workers is a change (≥ 1 worker on any machine)
    cfg = by_name(["dataloader_workers"])[0].apply(BASE, "cpu")
    assert set(changed(BASE, cfg)) == {"num_workers"} and "pin_memory" not in sparse(cfg)


def test_a_changed_learning_rate_is_shown_and_reproduced():
    cfg = dataclasses.replace(BASE, lr=0.09, data="my data/it's.txt")
    assert sparse(cfg) == {**BASE_SHOWN, "data": "my data/it's.txt", "lr": 0.09}
    assert "--lr 0.09" in command(cfg) and "--data 'my data/it'\"'\"'s.txt'" in command(cfg)
    assert _parse(to_argv(cfg)) == cfg


def test_trial_ids_hash_the_sparse_dict():
    # what --resume matches on: an equal sparse dict gives the same id, in any key order
    a = trial_id(3, "bf16", {"preset": "tiny", "dtype": "bf16"})
    assert a == trial_id(3, "bf16", {"dtype": "bf16", "preset": "tiny"}) and a.startswith("03:bf16:")
    assert a != trial_id(3, "bf16", {"preset": "tiny", "dtype": "fp32"})
    assert trial_id(0, "baseline", sparse(BASE)) == trial_id(0, "baseline", dict(BASE_SHOWN))


@settings(max_examples=60, deadline=None)
@given(compile=st.booleans(), gc=st.booleans(), tf32=st.booleans(), threads=st.none() | st.integers(1, 64),
       workers=st.integers(0, 8), mb=st.integers(1, 64), accum=st.integers(1, 8),
       dtype=st.sampled_from(["fp32", "bf16", "fp16", "auto"]), lr=st.none() | st.floats(1e-6, 1.0),
       opt=st.sampled_from(["forloop", "foreach", "fused"]))
def test_round_trip(compile, gc, tf32, threads, workers, mb, accum, dtype, lr, opt):
    cfg = TrainConfig(device="cpu", micro_batch=mb, grad_accum=accum, compile=compile, gc_disable=gc, tf32=tf32,
                      threads=threads, num_workers=workers, dtype=dtype, lr=lr, optimizer=opt).resolved()
    assert _parse(to_argv(cfg)) == cfg
    assert from_sparse(sparse(cfg)) == cfg
