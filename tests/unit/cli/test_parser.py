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
