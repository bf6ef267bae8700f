"""Command-line flags generated from the frozen config dataclasses: one source of truth per knob.

A field's name gives the flag (`micro_batch` → `--micro-batch`), its default the default, its
type the parser (`int`, `float`, `str`; `X | None` parses as X; `bool` → `--x/--no-x`;
`Literal[...]` → choices) and its docstring the help. `to_argv` is the inverse: a config's
values back to the flags that reproduce it (the tuner's trial command lines).

Field docstrings are read from the source with `ast` rather than kept in `field(metadata=...)`:
the dataclass then reads like torchtitan's job config (a field, its one-line docstring under
it), with nothing to repeat; the cost is one parse of the module per class, cached. Without
source (a frozen application) the help is empty, never wrong.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import textwrap
import types
import typing
from typing import Any, Iterable, Literal, Mapping

__all__ = ["add_flags", "field_docs", "flag", "from_args", "parser_type", "to_argv"]


def flag(name: str) -> str:
    """`micro_batch` → `--micro-batch`."""
    return "--" + name.replace("_", "-")


@functools.cache
def field_docs(cls: type) -> Mapping[str, str]:
    """Field name → the string literal written under it in the class body (PEP 257 attribute docstring)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for node, nxt in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return types.MappingProxyType(docs)


def parser_type(cls: type, name: str) -> tuple[type, tuple[Any, ...] | None]:
    """(the scalar type a flag parses to, the Literal choices or None) of one field."""
    t = typing.get_type_hints(cls)[name]
    args = [a for a in typing.get_args(t) if a is not type(None)]
    if typing.get_origin(t) in (typing.Union, types.UnionType) and len(args) == 1:
        t = args[0]  # X | None: the flag parses X; leaving it out keeps None
    if typing.get_origin(t) is Literal:
        choices = typing.get_args(t)
        return type(choices[0]), choices
    return t, None


def _fields(cls: type, only: Iterable[str] | None) -> list[dataclasses.Field]:
    by_name = {f.name: f for f in dataclasses.fields(cls)}
    if only is None:
        return list(by_name.values())
    unknown = [n for n in only if n not in by_name]
    if unknown:
        raise KeyError(f"{cls.__name__} has no field {', '.join(unknown)}")
    return [by_name[n] for n in only]


def add_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup, cls: type, *,
              only: Iterable[str] | None = None, defaults: Mapping[str, Any] | None = None,
              helps: Mapping[str, str] | None = None, metavars: Mapping[str, str] | None = None,
              switches: bool = False) -> None:
    """Add one flag per field of the dataclass `cls` (or per field named in `only`, in that order).

    `defaults` replaces a field's default for this command (tune trials are short: `--steps 10`);
    `helps` replaces a docstring where the command means something narrower; `metavars` names
    a value in --help (`--memory-limit SIZE`). A bool is `--x/--no-x` (a workload knob: the
    tuner's trial commands spell out both states); with `switches`, a command's on/off option
    instead: `--x` alone, for a field that defaults to False (`no_report` → `--no-report`)."""
    docs = field_docs(cls)
    defaults = defaults or {}
    helps = helps or {}
    metavars = metavars or {}
    for f in _fields(cls, only):
        default = defaults.get(f.name, f.default if f.default is not dataclasses.MISSING else None)
        text = helps.get(f.name, docs.get(f.name, ""))
        kind, choices = parser_type(cls, f.name)
        if kind is bool and switches:
            if default:  # the docstring says what --x does; --no-x would need the opposite text
                raise TypeError(f"{cls.__name__}.{f.name}: a switch defaults to False (name it no_{f.name})")
            parser.add_argument(flag(f.name), action="store_true", help=_escape(text))
            continue
        if kind is bool:
            parser.add_argument(flag(f.name), action=argparse.BooleanOptionalAction, default=bool(default),
                                help=_escape(text))
            continue
        if default is not None and default != "":
            text += f" (default {default})"
        parser.add_argument(flag(f.name), type=kind, default=default, choices=choices,
                            help=_escape(text), metavar=metavars.get(f.name) or _metavar(choices))


def _metavar(choices: tuple[Any, ...] | None) -> str | None:
    return "{" + ",".join(map(str, choices)) + "}" if choices else None


def _escape(text: str) -> str:
    return text.replace("%", "%%")  # argparse %-formats help strings


def from_args(cls: type, args: argparse.Namespace, *, only: Iterable[str] | None = None, **overrides: Any) -> Any:
    """An instance of `cls` from the parsed flags of its fields (those in `only`; the rest keep
    their defaults), then `overrides`."""
    names = [f.name for f in _fields(cls, only)]
    values = {n: getattr(args, n) for n in names if hasattr(args, n)}
    return cls(**{**values, **overrides})


def to_argv(cls: type, values: Mapping[str, Any]) -> list[str]:
    """Field values → the flags that set them, sorted by name; None (unset) is left out.

    The inverse of `add_flags` + `from_args`: parsing the result gives the same values."""
    argv: list[str] = []
    for name in sorted(values):
        v = values[name]
        kind, _ = parser_type(cls, name)
        if kind is bool:
            argv.append(flag(name) if v else "--no-" + name.replace("_", "-"))
        elif v is not None:
            argv += [flag(name), str(v)]
    return argv
