"""Regular expressions typed by a user (`whatif --scale PATTERN=F`), matched without backtracking.

Python's `re` backtracks: `(a+)+$` or `(a|a)*$` against a 30-character kernel name that
does not match takes minutes, and a trace holds thousands of names (issue #33: whatif hung).
RE2 (google-re2, Google's automaton engine) matches in time linear in the name, whatever
the pattern, with the DFA's memory capped (max_mem, 8 MiB). It refuses what cannot be done
without backtracking (backreferences `\\1`, look-around `(?=`, `(?<=`); such a pattern is a
one-line usage error naming the flag. Its syntax is otherwise Python's for everything a
kernel-name pattern needs (classes, alternation, `(?i)`, anchors, repetition).
"""

from __future__ import annotations

from typing import Any

from trainprof.errors import UsageError


def compile_user(pattern: str, flag: str) -> Any:
    """A compiled pattern with `.search(text)`; UsageError (one line) for one RE2 refuses."""
    try:
        import re2
    except ImportError:  # a dependency (pyproject.toml); absent only on a platform without its wheel
        raise UsageError(f"{flag}: user patterns need google-re2 (pip install google-re2), a regex engine "
                         "without backtracking") from None
    opts = re2.Options()
    opts.log_errors = False  # RE2 would print its own error line on stderr too
    try:
        return re2.compile(pattern, opts)
    except re2.error as e:
        why = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise UsageError(f"{flag} {pattern!r}: not a pattern RE2 accepts ({why}); backreferences and "
                         "look-around are not supported (matching must not backtrack)") from None
