"""`trainprof` command line: `main(argv) -> int`, one thin module per subcommand.

Expected errors (bad flags, missing files, a batch that does not fit) become one line on
stderr and exit code 2; nothing imports this package (memray's CLI layout).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from trainprof.errors import TrainprofError, UsageError


class _Parser(argparse.ArgumentParser):
    """argparse prints usage + error and calls sys.exit; we want one line and our exit code.
    No abbreviations (`--ste` silently meant `--steps`, and a flag added later would change
    what an old command line means); an unknown flag is named with the closest real ones."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        sub = self.prog.removeprefix("trainprof").strip()
        raise UsageError(f"{sub}: {message}" if sub else message)

    def parse_args(self, args=None, namespace=None):  # noqa: ANN001, ANN201
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            cmd = _command_parser(self, ns)
            cmd.error(_unknown(extras, cmd))
        return ns


def _command_parser(p: argparse.ArgumentParser, ns: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser that parsed the command's own flags: `bench allreduce`'s, not `trainprof`'s."""
    while True:
        # argparse keeps a parser's subcommands only in its actions
        sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(ns, sub.dest, None) if sub is not None else None
        if sub is None or name not in sub.choices:
            return p
        p = sub.choices[name]


def _unknown(extras: list[str], p: argparse.ArgumentParser) -> str:
    """`unrecognized argument --ste; did you mean --steps?`: the flags of `p` that the text
    begins (what an abbreviation would have matched), else the closest by difflib within
    0.1 of the best (`--stpes`: --steps 0.86, not --dtype 0.71); at most three."""
    import difflib

    flags = [s for a in p._actions for s in a.option_strings if s.startswith("--") and a.help != argparse.SUPPRESS]
    unknown = [x.split("=", 1)[0] for x in extras if x.startswith("--")]
    if not unknown:
        return f"unrecognized arguments: {' '.join(extras)}"
    name = unknown[0]
    near = [f for f in flags if f.startswith(name)]
    if not near:
        ratio = {f: difflib.SequenceMatcher(None, name, f).ratio() for f in flags}
        close = difflib.get_close_matches(name, flags, n=3, cutoff=0.6)
        near = [f for f in close if ratio[f] >= ratio[close[0]] - 0.1]
    text = f"unrecognized argument {name}" + (f" (and {', '.join(unknown[1:])})" if unknown[1:] else "")
    return text + (f"; did you mean {' or '.join(near[:3])}?" if near else "")


# Command → its module in cli/, in the order `trainprof --help` lists them.
COMMANDS = {"run": "run", "profile": "profile", "study": "study", "analyze": "analyze", "whatif": "whatif", "diff": "diff",
            "ncu-command": "ncu", "nsys-command": "nsys", "tune": "tune", "memory": "memory", "plan": "plan", "ettr": "ettr",
            "specs": "specs", "numa": "numa", "bench": "bench", "report": "report"}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; when argv names a command, only that command's subparser is built.
    Building all of them costs ~65 ms (run's flags read their help from dataclass
    docstrings), a tenth of `analyze --json` on a 50 MB trace; the others are never used."""
    import importlib

    from trainprof import __version__

    p = _Parser(prog="trainprof", description="Make PyTorch training fast and show why it is slow.")
    p.add_argument("--version", action="version", version=f"trainprof {__version__}")
    sub = p.add_subparsers(dest="subcommand", metavar="COMMAND", parser_class=_Parser)  # `command`: profile/tune/study -- COMMAND
    chosen = [argv[0]] if argv and argv[0] in COMMANDS else list(COMMANDS)
    for name in chosen:
        importlib.import_module(f"trainprof.cli.{COMMANDS[name]}").add_parser(sub)
    return p


# Flags whose value is itself a flag (`tune --arg-knob "--batch-size=32,64"`): argparse takes a
# value that starts with "-" for an option and refuses it, so `--arg-knob V` is read as `--arg-knob=V`.
DASH_VALUES = ("--arg-knob",)


def _dash_values(argv: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--":  # the user's command: untouched
            return out + argv[i:]
        if a in DASH_VALUES and i + 1 < len(argv):
            out.append(f"{a}={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    argv = _dash_values(list(sys.argv[1:] if argv is None else argv))
    if argv == ["--version"]:  # argparse's own answer, without building a parser (start-up: docs/benchmarks.md)
        from trainprof import __version__

        print(f"trainprof {__version__}")
        return 0
    _terminate_as_exception()
    try:
        parser = build_parser(argv)
        args = parser.parse_args(argv)
        if args.subcommand is None:
            parser.print_help()
            return 2
        _finite_flags(args)
        args.argv = argv  # subcommands that relaunch themselves (run --nproc) need the original
        return int(args.func(args) or 0)
    except TrainprofError as e:
        return _fail(str(e), e.exit_code)
    # The layers below name the file in an InputError; these are the last net, so that an
    # input or disk problem still reads as one line and exit 2, never a traceback.
    except RecursionError:
        return _fail("input nested too deep to read (more than ~1000 levels of JSON)", 2)
    except UnicodeDecodeError as e:
        return _fail(f"input is not valid UTF-8 text ({e.reason} at byte {e.start})", 2)
    except OSError as e:
        from trainprof.bounded import describe

        where = f"{e.filename}: " if e.filename else ""
        return _fail(f"{where}{describe(e)}", 2)
    except KeyboardInterrupt as e:
        how = getattr(e, "how", None)  # errors.Interrupted: the command that continues
        print("trainprof: interrupted" + (f"; {how}" if how else ""), file=sys.stderr)
        _exit_now_if_busy(130)
        return 130
    except Terminated:
        print("trainprof: terminated (SIGTERM); nothing half-written was left", file=sys.stderr)
        sys.stderr.flush()
        # Die of the signal after cleaning up, as a killed process does: a launcher (torchrun's
        # agent, a shell's $? = 143) tells "stopped" from "failed" by it.
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return 143


def entry() -> None:
    """The `trainprof` command (the console script, `python -m trainprof`): main(), then leave
    without the interpreter's teardown (_leave)."""
    _leave(main())


def _leave(code: int) -> None:
    """Exit with `code`. With no other thread alive (every child joined, every file written and
    closed by then), the atexit callbacks run and the process ends without freeing its objects
    and modules one by one: ~55 ms of an `analyze --out` of the DDP trace (780 → 725 ms, median
    of 6 alternating runs, docs/benchmarks.md). Otherwise, or where this CPython lacks the
    hook, the usual exit (threads joined first)."""
    import atexit
    import threading

    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if threading.active_count() == 1 and run_exitfuncs is not None:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe: the usual exit says so
            sys.exit(code)
        run_exitfuncs()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(code)
    sys.exit(code)


def _fail(message: str, code: int) -> int:
    from trainprof.report.text import one_line

    print(f"trainprof: error: {one_line(message)}", file=sys.stderr)
    return code


def _finite_flags(args: argparse.Namespace) -> None:
    """float('inf') and float('nan') parse as floats: refuse them for every flag at once
    (an `inf` peak wrote Infinity into analysis.json; a `nan` lr trains on garbage)."""
    import math

    for name, v in vars(args).items():
        if isinstance(v, float) and not math.isfinite(v):
            raise UsageError(f"--{name.replace('_', '-')} must be a finite number, got {v}")


class Terminated(BaseException):
    """SIGTERM, raised where the program is: `finally` blocks and atomic.staged_dir run, so a
    terminated command removes its staging folder instead of leaving `.NAME.*.partial`."""


def _terminate_as_exception() -> None:
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return  # an embedding program (a test runner, a launcher) chose its own handling

    def handler(signum, frame):  # noqa: ANN001, ARG001
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM kills at once
        # torch's SIGCHLD handler raises "DataLoader worker (pid N) is killed by signal" when a
        # worker dies; on a SIGTERM to the process group the workers die with us, and that
        # RuntimeError, raised inside the clean-up below, left the staging folder and a
        # traceback (#45). A terminated command has no use for the news. A no-op, not SIG_DFL: a
        # SIGCHLD already pending with this SIGTERM then finds no Python handler and CPython
        # prints "OSError: Signal 17 ignored due to race condition" as a traceback.
        signal.signal(signal.SIGCHLD, _ignore)
        raise Terminated()

    signal.signal(signal.SIGTERM, handler)


def _ignore(signum, frame) -> None:  # noqa: ANN001, ARG001
    pass


def _exit_now_if_busy(code: int) -> None:
    """After an interrupt, leave at once (stdio flushed, every `finally` already run) when an
    analysis thread of ours is still inside native code: at interpreter shutdown CPython ends
    daemon threads with pthread_exit, whose unwinding through RE2's/numpy's C++ frames ends the
    process with "terminate called without an active exception" (SIGABRT, exit -6 instead of
    130; tests/integration/test_hostile_names.py). Only such a thread triggers it, so a test
    calling main() in-process gets its 130 back."""
    import threading

    if any(t.name.startswith("trainprof-") and t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
