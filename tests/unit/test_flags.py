"""Flags generated from the config dataclasses (trainprof/flags.py): one source of truth per knob."""

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Literal

import pytest

from trainprof.cli import build_parser
from trainprof.flags import add_flags, field_docs, from_args, to_argv
from trainprof.workload.config import TrainConfig


@dataclass(frozen=True)
class Toy:
    n: int = 3
    """how many"""
    rate: float | None = None
    """a rate, 10% at most"""
    mode: Literal["a", "b"] = "a"
    """the mode"""
    on: bool = False
    """switch it on"""


def _parser(**kw) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    add_flags(p, Toy, **kw)
    return p


def test_type_default_choices_and_bool_come_from_the_field():
    assert from_args(Toy, _parser().parse_args([])) == Toy()
    got = from_args(Toy, _parser().parse_args(["--n", "5", "--rate", "0.5", "--mode", "b", "--on"]))
    assert got == Toy(n=5, rate=0.5, mode="b", on=True)
    assert from_args(Toy, _parser().parse_args(["--on", "--no-on"])).on is False
    with pytest.raises(SystemExit):  # not a choice of Literal["a", "b"]
        _parser().parse_args(["--mode", "c"])
    with pytest.raises(SystemExit):  # int field
        _parser().parse_args(["--n", "x"])


def test_help_is_the_docstring_and_shows_the_default():
    assert field_docs(Toy) == {"n": "how many", "rate": "a rate, 10% at most", "mode": "the mode", "on": "switch it on"}
    text = _parser().format_help()
    assert "how many (default 3)" in text and "10% at most" in text  # % escaped for argparse, shown once


def test_command_defaults_and_subsets():
    p = _parser(only=["n"], defaults={"n": 7})
    ns = p.parse_args([])
    assert ns.n == 7 and not hasattr(ns, "mode")
    assert from_args(Toy, ns, only=["n"]) == Toy(n=7)


def test_to_argv_round_trips_through_the_run_parser():
    cfg = {"compile": True, "micro_batch": 8, "pad_vocab": False, "lr": None, "dtype": "bf16", "data": "a b.txt"}
    argv = to_argv(TrainConfig, cfg)
    # sorted by name; None left out; bools spelled --x / --no-x
    assert argv == ["--compile", "--data", "a b.txt", "--dtype", "bf16", "--micro-batch", "8", "--no-pad-vocab"]
    ns = build_parser().parse_args(["run", *argv])
    got = from_args(TrainConfig, ns)
    assert {k: getattr(got, k) for k in cfg if cfg[k] is not None} == {k: v for k, v in cfg.items() if v is not None}


def test_every_train_config_field_is_a_run_flag_with_the_same_default():
    ns = build_parser().parse_args(["run"])
    assert from_args(TrainConfig, ns) == TrainConfig()  # the CLI and the API agree on every default
    assert TrainConfig().steps == 80  # the user-visible `--steps` default
    docs = field_docs(TrainConfig)
    assert set(docs) == {f.name for f in dataclasses.fields(TrainConfig)}  # every knob documented


def test_tune_and_memory_take_their_own_defaults():
    tune = build_parser().parse_args(["tune"])
    assert (tune.dtype, tune.steps, tune.eval_batches, tune.warmup_steps) == ("fp32", 10, 4, 2)
    mem = build_parser().parse_args(["memory"])
    assert (mem.steps, mem.dtype, mem.micro_batch) == (2, "auto", None)


@dataclass(frozen=True)
class Opts:
    limit: str | None = None
    """a size"""
    no_search: bool = False
    """skip the search"""


def test_switches_are_single_flags_and_metavars_name_values():
    p = argparse.ArgumentParser()
    add_flags(p, Opts, switches=True, metavars={"limit": "SIZE"})
    assert from_args(Opts, p.parse_args([])) == Opts()
    assert from_args(Opts, p.parse_args(["--no-search", "--limit", "2GiB"])) == Opts(limit="2GiB", no_search=True)
    text = p.format_help()
    assert "--limit SIZE" in text and "--no-no-search" not in text and "--search" not in text.replace("--no-search", "")

    @dataclass(frozen=True)
    class On:
        report: bool = True
        """write the report"""

    with pytest.raises(TypeError, match="no_report"):  # --no-report would need the opposite docstring
        add_flags(argparse.ArgumentParser(), On, switches=True)


def test_command_flags_keep_the_jobs_defaults():
    from trainprof.jobs.study import StudyConfig
    from trainprof.jobs.tune import TuneJob
    from trainprof.workload.config import TrainConfig as T

    tune = build_parser().parse_args(["tune"])
    job = TuneJob(base=T())
    assert (tune.min_gain, tune.verify_trials, 60 * tune.budget_minutes) == (job.min_gain, job.verify_trials,
                                                                              job.budget_s)
    assert (tune.json, tune.no_report, tune.resume, tune.force, tune.knobs, tune.out) == (False,) * 4 + (None,) * 2
    study = build_parser().parse_args(["study"])
    assert from_args(StudyConfig, study, only=[f.name for f in dataclasses.fields(StudyConfig)
                                               if f.name not in ("knobs", "budget_minutes")]) == StudyConfig()
    assert study.budget_minutes is None  # not given: a resumed study keeps its journaled budget
    run = build_parser().parse_args(["run"])
    assert (run.nproc, run.rows, run.profile_steps, run.system_interval, run.memory_snapshot) == (1, 16, 2, 0.5, 0)
    assert build_parser().parse_args(["run", "--memory-snapshot"]).memory_snapshot == 2
