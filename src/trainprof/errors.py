"""One exception tree for the whole tool; each class carries the process exit code.

The CLI catches `TrainprofError` at the top and prints one line, so a user never sees a
traceback for a problem they can fix (bad flag, missing file, batch too big).
"""

from __future__ import annotations


class TrainprofError(Exception):
    """Base class: an error we expected and can explain in one line."""

    exit_code = 1


class UsageError(TrainprofError):
    """Bad command-line flag or configuration value."""

    exit_code = 2


class InputError(TrainprofError):
    """A file or folder the user gave us is missing or unreadable."""

    exit_code = 2


class ResourceError(TrainprofError):
    """The requested work does not fit the machine (memory, device)."""

    exit_code = 2


class Interrupted(KeyboardInterrupt):
    """Ctrl-C in a command that can continue where it stopped: `how`, the command that does
    (`trainprof study --resume --out DIR`), goes on the one line cli.main prints (exit 130)."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


class ConfigError(UsageError):
    """A configuration value its dataclass refuses (raised in `__post_init__`, so before any
    folder or journal exists). It names the field by its path in the configuration tree
    (`study.train.dtype must be one of auto, fp32, bf16, fp16, got 'fp64'`); a command line
    adds the flag (`study.train.dtype (--dtype) ...`, trainprof/flags.py `build`).

    `path` is relative to the object that raised it, `owner` is where that object sits
    (`train`, `study.train`); `why` may name other fields of that object as `{0}`, `{1}`
    (`refs`, their relative paths), shown as paths, or as flags on a command line (then `why`
    is a format string: a value goes in `got`, appended as `, got 'fp64'`, never into it)."""

    _UNSET = object()

    def __init__(self, path: str | tuple[str, ...], why: str, *refs: str | tuple[str, ...], owner: str = "",
                 got: object = _UNSET, flags: dict[tuple[str, ...], str] | None = None) -> None:
        self.path = _parts(path)
        self.why = why
        self.refs = tuple(_parts(r) for r in refs)
        self.owner = owner
        self.got = got
        self.flags = dict(flags or {})
        super().__init__(self._text())

    def full(self, rel: tuple[str, ...]) -> tuple[str, ...]:
        return (*_parts(self.owner), *rel)

    def _name(self, rel: tuple[str, ...], head: bool) -> str:
        path = self.full(rel)
        flag = self.flags.get(path)
        if flag is None:
            return ".".join(path)
        return f"{'.'.join(path)} ({flag})" if head else flag

    def _text(self) -> str:
        why = self.why.format(*(self._name(r, False) for r in self.refs)) if self.refs else self.why
        got = "" if self.got is ConfigError._UNSET else f", got {self.got!r}"
        return f"{self._name(self.path, True)} {why}{got}"

    def within(self, owner: str) -> "ConfigError":
        """The same error, its object placed at `owner` in a larger tree."""
        return ConfigError(self.path, self.why, *self.refs, owner=owner, got=self.got, flags=self.flags)

    def with_flags(self, flags: dict[tuple[str, ...], str]) -> "ConfigError":
        """The same error with each field that is a flag named by it too."""
        return ConfigError(self.path, self.why, *self.refs, owner=self.owner, got=self.got, flags=flags)


def _parts(path: str | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(p for p in path.split(".") if p) if isinstance(path, str) else tuple(path)
