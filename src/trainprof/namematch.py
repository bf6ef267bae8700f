"""Patterns that run on text taken from a trace: linear time, on a bounded prefix.

Kernel, operator and runtime-call names are whatever the trace's writer put there, and
Python's `re` backtracks: `Memcpy.*Async` against `"Memcpy"` x 170,000 tries the `.*` from
every one of the 170,000 starts (O(n^2): analyze ran past 300 s on a 1.7 KB .json.gz, and the
worker thread holding the GIL inside one `re` call did not let SIGTERM through; issue #45).
Every built-in pattern that reads a trace name is compiled here instead, with RE2 (google-re2,
already our engine for user patterns: userregex.py), whose automaton matches in time linear in
the text whatever the pattern. RE2 has no look-around: a pattern that needs it fails to compile
at import time, so a test catches it, not a user.

Each search sees at most MATCH_CHARS characters of the name. The reader refuses longer names
anyway (TRAINPROF_MAX_NAME_CHARS, trace/reader.py), so this is the second bound: it keeps the
cost of one call small whatever that variable is raised to. A name cut short gets a NUL after
its prefix, so `$` cannot match at the cut.

Without google-re2 (a platform with no wheel; it is a dependency) the same patterns, which are
also valid Python syntax, run in `re`, still on the bounded prefix.
"""

from __future__ import annotations

import re
from typing import Any

try:
    import re2 as _re2
except ImportError:  # pragma: no cover - google-re2 is a dependency (pyproject.toml)
    _re2 = None

# The longest name in the shipped and shared real traces is 5,123 characters (a templated
# cuDNN kernel); Kineto's longest are ~10 KB. 16 Ki characters keeps every real name whole.
MATCH_CHARS = 16384
_MAX_MEM = 32 << 20  # RE2's DFA budget per pattern; past it RE2 falls back to its NFA (still linear)

REGISTRY: list["NamePattern"] = []  # every pattern compiled here (tests time each one)


def bounded(name: str | bytes) -> str | bytes:
    """The part of `name` a pattern sees (ASCII bytes too: a token string, classify.py)."""
    if len(name) <= MATCH_CHARS:
        return name
    return name[:MATCH_CHARS] + (b"\0" if isinstance(name, bytes) else "\0")


class NamePattern:
    """A compiled pattern with `search`, `match` and `sub` over trace text, as `re` has them."""

    __slots__ = ("pattern", "ignorecase", "_re")

    def __init__(self, pattern: str, ignorecase: bool = False) -> None:
        self.pattern, self.ignorecase = pattern, ignorecase
        if _re2 is None:  # pragma: no cover
            self._re: Any = re.compile(pattern, re.IGNORECASE if ignorecase else 0)
            return
        opts = _re2.Options()
        opts.log_errors = False
        opts.case_sensitive = not ignorecase
        opts.max_mem = _MAX_MEM
        try:
            self._re = _re2.compile(pattern, opts)
        except _re2.error as e:
            raise ValueError(f"{pattern!r} is not an RE2 pattern (look-around and backreferences need "
                             f"backtracking): {e}") from None

    def search(self, name: str | bytes) -> Any:
        return self._re.search(bounded(name))

    def match(self, name: str) -> Any:
        return self._re.match(bounded(name))

    def sub(self, repl: str, name: str) -> str:
        return self._re.sub(repl, bounded(name))

    def __repr__(self) -> str:
        return f"NamePattern({self.pattern!r}{', ignorecase=True' if self.ignorecase else ''})"


def compile(pattern: str, ignorecase: bool = False) -> NamePattern:  # noqa: A001 - re's name, on purpose
    p = NamePattern(pattern, ignorecase)
    REGISTRY.append(p)
    return p


def not_followed_by(literal: str) -> str:
    """RE2 for Python's `(?!literal)`: the end of the text, or the first character where the text
    stops spelling `literal` (`(?!ab)` -> `(?:$|[^a]|a[^b]|a$)`). Letters, digits and spaces only
    (what a token string holds), so nothing needs escaping."""
    if not re.fullmatch(r"[A-Za-z0-9 ]+", literal):
        raise ValueError(f"not_followed_by({literal!r}): letters, digits and spaces only")
    parts = ["$"]
    for i, ch in enumerate(literal):
        parts.append(f"{literal[:i]}[^{ch}]")
        if i:
            parts.append(f"{literal[:i]}$")
    return "(?:" + "|".join(parts) + ")"
