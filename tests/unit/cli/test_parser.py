"""The command-line parser builds only the subcommand it is asked for (cli/__init__.py)."""

import pytest

from trainprof.cli import COMMANDS, build_parser, main


def _choices(parser) -> list[str]:
    return list(parser._subparsers._group_actions[0].choices)  # argparse keeps them here


def test_a_named_command_builds_only_its_own_subparser():
    assert _choices(build_parser(["analyze", "x.json"])) == ["analyze"]
    assert _choices(build_parser(["run"])) == ["run"]


def test_no_or_unknown_command_builds_all_in_help_order():
    assert _choices(build_parser()) == list(COMMANDS)
    assert _choices(build_parser(["--help"])) == list(COMMANDS)
    assert _choices(build_parser(["analyse"])) == list(COMMANDS)


def test_every_command_module_exists_and_adds_its_parser():
    # a name in COMMANDS without its module would fail only when that command is typed
    for name in COMMANDS:
        assert _choices(build_parser([name])) == [name]


def test_unknown_command_still_lists_the_choices(capsys):
    assert main(["analyse", "x"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'analyse'" in err and "'analyze'" in err and "'whatif'" in err


@pytest.mark.parametrize("argv, says", [
    # an abbreviation argparse used to accept (`--ste 40` ran 40 steps): refused, the flag it meant named
    (["run", "--ste", "40"], "run: unrecognized argument --ste; did you mean --steps?"),
    (["run", "--prof"], "run: unrecognized argument --prof; did you mean --profile or --profile-steps?"),
    (["study", "--budget=3"], "study: unrecognized argument --budget; did you mean --budget-minutes?"),
    # a typo: the closest flags by difflib, within 0.1 of the best (--steps 0.86, not --dtype 0.71)
    (["run", "--stpes", "4"], "run: unrecognized argument --stpes; did you mean --steps?"),
    (["analyze", "x.json", "--jsn"], "analyze: unrecognized argument --jsn; did you mean --json?"),
    (["bench", "allreduce", "--itres", "3"], "bench allreduce: unrecognized argument --itres; did you mean --iters?"),
    (["run", "--zzzzzz"], "run: unrecognized argument --zzzzzz"),
])
def test_an_unknown_flag_is_one_line_with_the_closest_ones(capsys, argv, says):
    # issue #37 item 5.9: no "did you mean", and abbreviations silently accepted
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"trainprof: error: {says}"


def test_every_parser_refuses_abbreviations():
    import argparse

    def walk(p):  # noqa: ANN001, ANN202
        yield p
        for a in p._actions:  # argparse keeps subcommands in its actions
            if isinstance(a, argparse._SubParsersAction):
                for c in a.choices.values():
                    yield from walk(c)

    parsers = list(walk(build_parser()))
    assert len(parsers) > len(COMMANDS) and all(p.allow_abbrev is False for p in parsers)
