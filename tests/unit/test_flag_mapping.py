"""Every command's flags are its configuration's fields (issue #30, item 1): walk each
command's argparse parser and check that each flag maps to exactly one dataclass field, with
that field's type, choices and default, and that every field of the command's configuration
tree is a flag or is listed below as deliberately flagless, with the reason."""

import argparse
import dataclasses
import fnmatch
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from trainprof.cli import COMMANDS, build_parser
from trainprof.flags import META, leaves, parser_roots

_NOT_WRITTEN = "prints only: no output folder to name, replace, resume or report into"
_NO_RESUME = "one pass: nothing to resume"
# (command, field-path pattern) → why the field has no flag in that command
FLAGLESS = {
    ("profile", "output.resume*"): _NO_RESUME,
    ("profile", "output.json"): "the profiled program owns stdout",
    ("study", "study.train.*"): "the tune's knobs change the other workload fields (tune/reference.PINNED)",
    ("study", "output.json"): "a study prints its stages as they run; study.json is in --out",
    ("study", "output.report"): "the report is what a study is for: always written",
    ("analyze", "output.resume*"): _NO_RESUME,
    ("whatif", "output.*"): _NOT_WRITTEN,
    ("diff", "output.resume*"): _NO_RESUME,
    ("diff", "output.report"): "diff.json only: the report is analyze's and study's",
    ("nsys-command", "output.*"): _NOT_WRITTEN,
    ("tune", "train.*"): "the knobs change the other workload fields (tune/reference.PINNED)",
    ("memory", "train.*"): "the search varies micro-batch and the ladder the memory knobs; the others are "
                           "irrelevant to peak memory at 2 steps",
    ("memory", "output.resume*"): _NO_RESUME,
    ("memory", "output.report"): "memory.json only",
    ("plan", "output.resume*"): "arithmetic: nothing to resume",
    ("plan", "output.report"): "plan.json only",
    ("ettr", "output.*"): _NOT_WRITTEN,
    ("specs", "output.*"): _NOT_WRITTEN,
    ("numa", "output.*"): _NOT_WRITTEN,
    ("bench batch", "train.*"): "the device is bench's --device, the micro-batch the sweep's; the rest of the "
                                "workload at `trainprof run`'s defaults",
    ("bench scaling", "train.*"): "the device is bench's --device; the rest of the workload at `trainprof run`'s "
                                  "defaults",
    ("bench *", "output.resume*"): _NO_RESUME,
    ("bench *", "output.report"): "bench.json only",
    ("report", "output.resume*"): _NO_RESUME,
    ("report", "output.json"): "writes report files, prints their paths",
    ("report", "output.report"): "it is the report",
}


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for name in COMMANDS:
        p = _subparsers(build_parser([name]))[name]
        kinds = _subparsers(p)
        out += [(f"{name} {k}", kp) for k, kp in kinds.items()] if kinds else [(name, p)]
    return out


COMMAND_PARSERS = _commands()


def _fields(obj, at=()):
    for f in dataclasses.fields(obj):
        if f.metadata.get(META, {}).get("section"):
            yield from _fields(getattr(obj, f.name), (*at, f.name))
        else:
            yield ".".join((*at, f.name))


def test_every_command_is_walked():
    # 16 commands, bench's 7 kinds each a parser of its own: 15 + 7
    assert len(COMMAND_PARSERS) == 22 and all(parser_roots(p) for _, p in COMMAND_PARSERS)


@pytest.mark.parametrize("name, parser", COMMAND_PARSERS, ids=[n for n, _ in COMMAND_PARSERS])
def test_each_flag_is_exactly_one_field_with_its_type_choices_and_default(name, parser):
    found = [leaf for root in parser_roots(parser) for leaf in leaves(root)]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        owners = [leaf for leaf in found if leaf.dest == action.dest]
        assert len(owners) == 1, (name, action.option_strings or action.dest, [o.path for o in owners])
        leaf = owners[0]
        if action.help == argparse.SUPPRESS and leaf.meta.get("off") in action.option_strings:
            continue  # a hidden old spelling that switches the same field off (--no-plots)
        assert leaf.flag in action.option_strings or leaf.flag == action.dest, (name, leaf.flag)
        kind, choices = leaf.kind
        if kind is bool:
            assert action.default == bool(leaf.default) and action.nargs == 0 or action.nargs is None, (name, leaf.flag)
            continue
        if choices and not leaf.meta.get("parse"):
            assert tuple(action.choices) == choices, (name, leaf.flag)
        if leaf.meta.get("positional"):
            continue
        if leaf.meta.get("repeat"):  # tuple[X, ...]: one X per use of the flag
            assert tuple(action.default) == tuple(leaf.default or ()), (name, leaf.flag)
            kind = typing.get_args(kind)[0]
        else:
            assert action.default == leaf.default, (name, leaf.flag)  # the default lives in the dataclass only
        if not leaf.meta.get("parse"):
            assert action.type is kind, (name, leaf.flag)
    flags = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    assert len({a.dest for a in flags}) == len(found), name  # every leaf has its argument


@pytest.mark.parametrize("name, parser", COMMAND_PARSERS, ids=[n for n, _ in COMMAND_PARSERS])
def test_every_field_is_a_flag_or_deliberately_flagless(name, parser):
    roots = parser_roots(parser)
    flagged = {".".join(leaf.at) for root in roots for leaf in leaves(root)}
    rules = [pat for (cmd, pat) in FLAGLESS if fnmatch.fnmatch(name, cmd)]
    flagless = [p for root in roots for p in _fields(root) if p not in flagged]
    unlisted = [p for p in flagless if not any(fnmatch.fnmatch(p, pat) for pat in rules)]
    assert unlisted == [], f"{name}: give these a flag or a reason in FLAGLESS"
    # and every reason still covers a field without a flag (no stale entry)
    for pat in rules:
        assert any(fnmatch.fnmatch(p, pat) for p in flagless), (name, pat)


def test_help_shows_each_default_once():
    # the default comes from the dataclass, appended by flags.py; a docstring never repeats it
    for name, parser in COMMAND_PARSERS:
        for action in parser._actions:
            text = action.help or ""
            # at most one "(default", and no number written as a default before it by hand
            head = text.rsplit("(default", 1)[0]
            assert text.count("(default") <= 1 and not re.search(r"default:? \d", head), (name, text)


def test_study_refuses_a_bad_dtype_before_writing_anything(tmp_path):
    # end to end (a process, as a user runs it): argparse takes --dtype's choices from
    # TrainConfig's Literal, so fp64 is refused at exit 2 before --out or a journal exists
    out = tmp_path / "X"
    r = subprocess.run([sys.executable, "-m", "trainprof", "study", "--dtype", "fp64", "--out", str(out)],
                       capture_output=True, text=True, env=_env(), timeout=60)
    assert r.returncode == 2 and not out.exists(), r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "--dtype" in line and "fp64" in line and "Traceback" not in r.stderr


def test_study_refuses_a_bad_value_by_its_field_path(tmp_path, capsys):
    # a value argparse's type lets through is refused by the dataclass, by path and flag
    from trainprof.cli import main

    out = tmp_path / "X"
    assert main(["study", "--profile-steps", "0", "--out", str(out)]) == 2
    assert not out.exists()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == "trainprof: error: study.profile_steps (--profile-steps) must be ≥ 1, got 0"


@pytest.mark.parametrize("argv, says", [
    (["--steps", "2"], "train.steps (--steps) must be ≥ 3: --warmup-steps is 2 and the summary needs one measured "
                       "step after the warm-up, got 2"),
    (["--steps", "3", "--warmup-steps", "3"], "train.steps (--steps) must be ≥ 4: --warmup-steps is 3"),
])
def test_run_refuses_steps_that_leave_no_measured_step(tmp_path, capsys, argv, says):
    # `run --steps 2` measured 1 step after 1 warm-up step, not the 2 asked for, without a word
    # (issue #37 item 5.4): refused like tune's and study's, naming the flag and the minimum
    from trainprof.cli import main

    out = tmp_path / "X"
    assert main(["run", *argv, "--out", str(out)]) == 2
    assert not out.exists()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("trainprof: error: " + says)


def _env() -> dict:
    import os

    src = str(Path(__file__).resolve().parents[2] / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
