"""Flags generated from the configuration tree (trainprof/flags.py): one declaration per knob."""

import argparse
import dataclasses
from dataclasses import dataclass
from typing import ClassVar, Literal

import pytest

from trainprof.cli import build_parser
from trainprof.errors import ConfigError, UsageError
from trainprof.flags import add_flags, build, field_docs, leaves, option, section, to_argv
from trainprof.jobs.run_config import RunJob
from trainprof.workload.config import TrainConfig


@dataclass(frozen=True)
class Toy:
    PATH: ClassVar[str] = "toy"

    n: int = 3
    """how many"""
    rate: float | None = None
    """a rate, 10% at most"""
    mode: Literal["a", "b"] = "a"
    """the mode"""
    on: bool = False
    """switch it on"""
    report: bool = True
    """write the report"""

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError("n", "must be ≥ 1", owner=self.PATH, got=self.n)


@dataclass(frozen=True)
class Root:
    PATH: ClassVar[str] = "cmd"

    toy: Toy = section(Toy(n=7), flags=("n", "mode", "on", "report"), helps={"n": "how many, for this command"})
    """the toy"""
    limit: str | None = option(None, metavar="SIZE", flag="--max")
    """a size"""


def _parser(root=Root) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    add_flags(p, root)
    return p


def test_type_default_choices_and_switches_come_from_the_field():
    assert build(Root, _parser().parse_args([])) == Root()
    got = build(Root, _parser().parse_args(["--n", "5", "--mode", "b", "--on", "--no-report", "--max", "2G"]))
    assert got == Root(toy=Toy(n=5, mode="b", on=True, report=False), limit="2G")
    with pytest.raises(SystemExit):  # not a choice of Literal["a", "b"]
        _parser().parse_args(["--mode", "c"])
    with pytest.raises(SystemExit):  # int field
        _parser().parse_args(["--n", "x"])
    with pytest.raises(SystemExit):  # `rate` is not among the section's flags
        _parser().parse_args(["--rate", "0.5"])


def test_the_roots_instance_gives_the_default_and_help_shows_it_once():
    assert field_docs(Toy)["rate"] == "a rate, 10% at most"
    text = _parser().format_help()
    assert "how many, for this command (default 7)" in text  # the section's default instance, its help
    assert "--max SIZE" in text and "do not write the report" in text  # a True switch reads as its negation
    assert "--on-" not in text and "--no-on" not in text  # a False switch is one flag


def test_a_refused_value_names_its_path_and_flag():
    with pytest.raises(UsageError) as e:
        build(Root, _parser().parse_args(["--n", "0"]))
    assert str(e.value) == "cmd.toy.n (--n) must be ≥ 1, got 0" and e.value.exit_code == 2
    with pytest.raises(UsageError, match=r"^toy\.n must be ≥ 1, got 0$"):  # the API: the path alone
        Toy(n=0)


def test_a_repeated_flag_collects_one_value_per_use():
    @dataclass(frozen=True)
    class Edits:
        remove: tuple[str, ...] = option((), repeat=True, metavar="KIND")
        """a kind to remove (repeatable)"""

    # each use is one str, not the characters of one (a tuple's element type parses it)
    assert build(Edits, _parser(Edits).parse_args(["--remove", "gpu", "--remove", "io"])) == Edits(("gpu", "io"))
    assert build(Edits, _parser(Edits).parse_args([])) == Edits()


def test_two_fields_cannot_share_one_flag():
    @dataclass(frozen=True)
    class Clash:
        toy: Toy = section(Toy(), flags=("n",))
        n: int = 1
        """another n"""

    with pytest.raises(ValueError, match="both parse into 'n'"):
        _parser(Clash)


def test_to_argv_round_trips_through_the_run_parser():
    cfg = {"compile": True, "micro_batch": 8, "pad_vocab": False, "lr": None, "dtype": "bf16", "data": "a b.txt"}
    argv = to_argv(TrainConfig, cfg)
    # sorted by name; None left out; bools spelled --x / --no-x
    assert argv == ["--compile", "--data", "a b.txt", "--dtype", "bf16", "--micro-batch", "8", "--no-pad-vocab"]
    got = build(RunJob, build_parser().parse_args(["run", *argv])).train
    assert {k: getattr(got, k) for k in cfg if cfg[k] is not None} == {k: v for k, v in cfg.items() if v is not None}


def test_every_train_config_field_is_a_run_flag_with_the_same_default():
    job = build(RunJob, build_parser().parse_args(["run"]))
    assert job.train == TrainConfig()  # the CLI and the API agree on every default
    assert TrainConfig().steps == 80  # the user-visible `--steps` default
    assert {leaf.name for leaf in leaves(RunJob) if leaf.at[0] == "train"} == {
        f.name for f in dataclasses.fields(TrainConfig)}
    assert set(field_docs(TrainConfig)) == {f.name for f in dataclasses.fields(TrainConfig)}  # every knob documented


def test_commands_take_their_own_defaults_from_their_root():
    from trainprof.jobs.study_config import StudyJob
    from trainprof.jobs.tune_config import TuneJob

    tune = build(TuneJob, build_parser().parse_args(["tune"]))
    t = tune.train
    assert (t.dtype, t.steps, t.eval_batches, t.warmup_steps) == ("fp32", 10, 4, 2)
    assert tune == TuneJob()  # the flags' defaults are the job's, no copy to drift
    assert (tune.tune.min_gain, tune.tune.verify_trials, tune.budget_minutes) == (0.03, 3, 15.0)
    study = build(StudyJob, build_parser().parse_args(["study"]))
    assert study == StudyJob() and study.study.tune == tune.tune  # one ladder default for tune and study
    mem = build_parser().parse_args(["memory"])
    assert (mem.steps, mem.dtype, mem.micro_batch) == (2, "auto", None)
    run = build_parser().parse_args(["run"])
    assert (run.nproc, run.rows, run.profile_steps, run.system_interval, run.memory_snapshot) == (1, 16, 2, 0.5, 0)
    assert build_parser().parse_args(["run", "--memory-snapshot"]).memory_snapshot == 2


def test_flags_are_never_abbreviated():
    # add_flags turns argparse's prefix matching off (issue #37 item 5.9): `--mod b` meant `--mode b`
    with pytest.raises(SystemExit):
        _parser().parse_args(["--mod", "b"])
    assert build(Root, _parser().parse_args(["--mode", "b"])).toy.mode == "b"


def test_flag_order_places_a_flat_sections_flags_among_the_owners():
    @dataclass(frozen=True)
    class Shared:
        a: int = 1
        """a"""
        b: int = 2
        """b"""

    @dataclass(frozen=True)
    class Owner:
        FLAG_ORDER: ClassVar[tuple[str, ...]] = ("x", "a", "y", "b")
        x: int = 0
        """x"""
        y: int = 0
        """y"""
        shared: Shared = section(Shared(), flat=True)
        """the shared one"""

    assert [leaf.name for leaf in leaves(Owner)] == ["x", "a", "y", "b"]  # declared x, y, a, b
    assert [leaf.at for leaf in leaves(Owner)][1] == ("shared", "a")
    help_text = _parser(Owner).format_help()
    assert help_text.index("--x") < help_text.index("--a") < help_text.index("--y") < help_text.index("--b")

    @dataclass(frozen=True)
    class Forgot(Owner):
        FLAG_ORDER: ClassVar[tuple[str, ...]] = ("x", "a", "y")

    with pytest.raises(KeyError, match="must name each of its flags once"):
        leaves(Forgot)
