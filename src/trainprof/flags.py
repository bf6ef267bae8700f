"""Command-line flags generated from the configuration tree: one declaration per knob.

A command's configuration is one frozen dataclass (its root: `jobs/tune_config.TuneJob`,
`jobs/study_config.StudyJob`, ...) whose fields are leaves (a value) or sections (another
config dataclass: `train: TrainConfig`, `output: OutputOptions`), as torchtitan composes its
JobConfig. Every leaf a command exposes is one flag:

* the name gives the flag (`micro_batch` → `--micro-batch`; `option(flag=...)` where they
  differ), the *root's default instance* gives the default (so `trainprof tune`'s
  `train: TrainConfig = section(TrainConfig(steps=10, dtype="fp32"))` is where tune's
  `--steps 10` is declared, once), the type gives the parser (`int`, `float`, `str`; `X | None`
  parses as X; `Literal[...]` → choices; `option(parse=...)` for a list such as `--sizes
  4K,1M`), the docstring under the field gives the help;
* a bool is a switch (`--json`; a field that defaults to True is `--no-x`: `report` →
  `--no-report`), or `--x/--no-x` in a class with `FLAG_BOOLS = "both"` (the workload's
  knobs: the tuner's trial command lines spell out both states);
* a section says which of its fields are flags (`section(flags=PINNED)`), may replace a
  help where the command means something narrower, and places them in a --help group; a
  class whose flat section's fields sit among its own in --help lists them in `FLAG_ORDER`.

`build(root, args)` makes the tree back from the parsed flags (each section through
`dataclasses.replace`, so each validates in `__post_init__`), and a refused value becomes one
line naming its path and flag (errors.ConfigError). `to_argv` is the inverse for one class:
a config's values back to the flags that reproduce it (the tuner's trial command lines).

Field docstrings are read from the source with `ast` rather than kept in metadata: a
dataclass reads like torchtitan's job config (a field, its one-line docstring under it); the
cost is one parse per class, cached. Without source (a frozen application) the help is
empty, never wrong.
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
from typing import Any, Callable, Iterable, Literal, Mapping

__all__ = ["Leaf", "add_flags", "build", "field_docs", "flag", "leaves", "option", "parser_type", "section", "show_value",
           "to_argv"]

META = "trainprof.flags"  # the key of our entry in a field's metadata
_NO = dataclasses.MISSING


def flag(name: str) -> str:
    """`micro_batch` → `--micro-batch`."""
    return "--" + name.replace("_", "-")


# ---- declaring --------------------------------------------------------------------------
def option(default: Any = _NO, *, flag: str | None = None, aliases: tuple[str, ...] = (), help: str | None = None,
           metavar: str | None = None, hidden: bool = False, parse: Callable[[str, str], Any] | None = None,
           show: Callable[[Any], str] | None = None, const: Any = _NO, positional: bool = False,
           nargs: str | None = None, repeat: bool = False, group: str | None = None,
           off: str | None = None) -> Any:
    """A leaf field with what its type cannot say: another `flag` spelling (and `aliases`),
    `hidden` plumbing, a `parse(text, flag)` for a list value (and `show` for its default in
    --help), an optional value (`const`: `--memory-snapshot` alone means 2), a `positional`
    argument (`nargs`), a `repeat`able flag, a hidden `off` switch that sets it False."""
    meta = {k: v for k, v in dict(flag=flag, aliases=aliases, help=help, metavar=metavar, hidden=hidden, parse=parse,
                                   show=show, positional=positional, nargs=nargs, repeat=repeat, group=group,
                                   off=off).items() if v not in (None, False, ())}
    if const is not _NO:
        meta["const"] = const
    return dataclasses.field(default=default, metadata={META: meta})


def section(default: Any, *, flags: Iterable[str] | None = None, helps: Mapping[str, str] | None = None,
            metavars: Mapping[str, str] | None = None, group: str | None = None,
            groups: Mapping[str, str] | None = None, flat: bool = False) -> Any:
    """A field holding another config dataclass; `default` is its instance for this command
    (its values are the command's defaults). `flags`: which of its leaves are flags (all when
    None); `helps`, `metavars`: per leaf, for this command; `group` (and per leaf `groups`):
    the --help group; `flat`: its fields are named without its own name (`top`, not `top.top`)."""
    meta = {"section": True, "flags": tuple(flags) if flags is not None else None, "helps": dict(helps or {}),
            "metavars": dict(metavars or {}), "group": group, "groups": dict(groups or {}), "flat": flat}
    return dataclasses.field(default=default, metadata={META: meta})


@functools.cache
def field_docs(cls: type) -> Mapping[str, str]:
    """Field name → the string literal written under it in the class body (PEP 257 attribute docstring)."""
    node = _module_classes(getattr(cls, "__module__", "")).get(cls.__qualname__)
    if node is None:  # a class made inside a function (tests) or without its module's source
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError):
            return {}
        node = tree.body[0] if tree.body and isinstance(tree.body[0], ast.ClassDef) else None
    body = node.body if node is not None else []
    docs: dict[str, str] = {}
    for item, nxt in zip(body, body[1:]):
        if (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            docs[item.target.id] = " ".join(nxt.value.value.split())
    return types.MappingProxyType(docs)


@functools.cache
def _module_classes(module: str) -> Mapping[str, ast.ClassDef]:
    """Qualified name → class node, for every module-level class (and class in a class) of a
    module, from one parse of its source: `inspect.getsource(cls)` parses the whole module
    again per class (~7 ms each; `bench`'s parser went from 5 to 46 ms with it)."""
    import sys

    mod = sys.modules.get(module)
    try:
        tree = ast.parse(inspect.getsource(mod)) if mod is not None else None
    except (OSError, TypeError):
        tree = None
    found: dict[str, ast.ClassDef] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                found[prefix + node.name] = node
                visit(node.body, f"{prefix}{node.name}.")

    if tree is not None:
        visit(tree.body, "")
    return found


def parser_type(cls: type, name: str) -> tuple[type, tuple[Any, ...] | None]:
    """(the scalar type a flag parses to, the Literal choices or None) of one field."""
    t = _hints(cls)[name]
    args = [a for a in typing.get_args(t) if a is not type(None)]
    if typing.get_origin(t) in (typing.Union, types.UnionType) and len(args) == 1:
        t = args[0]  # X | None: the flag parses X; leaving it out keeps None
    if typing.get_origin(t) is Literal:
        choices = typing.get_args(t)
        return type(choices[0]), choices
    return t, None


@functools.cache
def _hints(cls: type) -> Mapping[str, Any]:
    return typing.get_type_hints(cls)


# ---- the leaves of a tree ----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Leaf:
    """One flag of a command: where its field is, and how it parses."""

    at: tuple[str, ...]
    """attribute path from the root object (`("train", "dtype")`)"""
    path: tuple[str, ...]
    """the name errors use: the root's PATH, then the sections (a flat one left out), then the field"""
    owner: type
    """the dataclass that declares the field"""
    name: str
    default: Any
    """the value in the root's default instance: the flag's default"""
    help: str
    group: str | None
    meta: Mapping[str, Any]

    @property
    def flag(self) -> str:
        """What a user types: `--dtype`, `--no-report` (a switch whose field defaults to True), or
        a positional's name."""
        if self.meta.get("positional"):
            return self.name
        if self.meta.get("flag"):
            return self.meta["flag"]
        if self.switched_off:
            return "--no-" + self.name.replace("_", "-")
        return flag(self.name)

    @property
    def dest(self) -> str:
        """The argparse attribute: the field's name, or its renamed flag's (`--timeout` → timeout)."""
        if self.meta.get("positional"):
            return self.name
        return self.meta["flag"][2:].replace("-", "_") if self.meta.get("flag") else self.name

    @property
    def switched_off(self) -> bool:
        """A single switch that sets a field defaulting to True to False (`--no-report`)."""
        return (self.kind[0] is bool and bool(self.default)
                and getattr(self.owner, "FLAG_BOOLS", "switch") != "both")

    @property
    def kind(self) -> tuple[type, tuple[Any, ...] | None]:
        return parser_type(self.owner, self.name)


def _root(root: Any) -> Any:
    return root() if isinstance(root, type) else root


def leaves(root: Any) -> list[Leaf]:
    """The flags of the configuration `root` (a dataclass, or an instance: its defaults), in
    declaration order."""
    obj = _root(root)
    out: list[Leaf] = []
    _walk(obj, (), tuple(p for p in getattr(type(obj), "PATH", "").split(".") if p), {}, None, out)
    return out


def _walk(obj: Any, at: tuple[str, ...], path: tuple[str, ...], sec: Mapping[str, Any], group: str | None,
          out: list[Leaf]) -> None:
    cls = type(obj)
    docs = field_docs(cls)
    chosen = sec.get("flags")
    start = len(out)
    for f in dataclasses.fields(cls):
        value = getattr(obj, f.name)
        meta = f.metadata.get(META, {})
        if meta.get("section"):
            if chosen is None or f.name in chosen:
                sub = path if meta.get("flat") else (*path, f.name)
                _walk(value, (*at, f.name), sub, meta, meta.get("group") or group, out)
            continue
        if chosen is not None and f.name not in chosen:
            continue
        text = sec.get("helps", {}).get(f.name) or meta.get("help")
        if text:  # written for this flag: used as it is (a switch's docstring says what it switches off)
            meta = {**meta, "help_final": True}
        else:
            text = docs.get(f.name, "")
        if sec.get("metavars", {}).get(f.name):
            meta = {**meta, "metavar": sec["metavars"][f.name]}
        where = sec.get("groups", {}).get(f.name) or meta.get("group") or group
        out.append(Leaf((*at, f.name), (*path, f.name), cls, f.name, value, text, where, meta))
    if chosen is not None:
        missing = set(chosen) - {f.name for f in dataclasses.fields(cls)}
        if missing:
            raise KeyError(f"{cls.__name__} has no field {', '.join(sorted(missing))}")
    order = getattr(cls, "FLAG_ORDER", None)
    if order is not None:
        out[start:] = _ordered(cls, out[start:], order)


def _ordered(cls: type, mine: list[Leaf], order: tuple[str, ...]) -> list[Leaf]:
    """A class's flags in its `FLAG_ORDER` (names of its own and its flat sections' leaves):
    a section shared by two commands (options.MonitorOptions) sits among each command's own
    flags where that command's --help has always listed them."""
    by_name = {leaf.name: leaf for leaf in mine}
    if len(by_name) != len(mine) or len(set(order)) != len(order) or not set(by_name) <= set(order):
        raise KeyError(f"{cls.__name__}.FLAG_ORDER must name each of its flags once: {', '.join(sorted(by_name))}")
    return [by_name[name] for name in order if name in by_name]


# ---- argparse ----------------------------------------------------------------------------
def add_flags(parser: argparse.ArgumentParser, root: Any) -> None:
    """Add one argument per leaf of `root` (a config dataclass or an instance of it) to
    `parser`, each in its --help group; the parser remembers its roots (`parser_roots`)."""
    parser.allow_abbrev = False  # `--ste` must not silently mean `--steps` (cli._Parser says which was meant)
    groups: dict[str, Any] = {}
    taken = parser.__dict__.setdefault("_trainprof_dests", {})
    for leaf in leaves(root):
        if leaf.dest in taken:  # argparse would let two flags share one attribute, the last one winning
            raise ValueError(f"{'.'.join(leaf.path)} and {taken[leaf.dest]} both parse into {leaf.dest!r}")
        taken[leaf.dest] = ".".join(leaf.path)
        target = parser
        if leaf.group:
            target = groups.get(leaf.group) or groups.setdefault(leaf.group, _group(parser, leaf.group))
        _add(target, leaf)
    parser.__dict__.setdefault("_trainprof_roots", []).append(_root(root))


def parser_roots(parser: argparse.ArgumentParser) -> list[Any]:
    """The configuration roots `add_flags` built this parser from (for tests and tools)."""
    return list(parser.__dict__.get("_trainprof_roots", []))


def _group(parser: argparse.ArgumentParser, title: str) -> Any:
    for g in parser._action_groups:  # argparse has no public lookup of a group by title
        if g.title == title:
            return g
    return parser.add_argument_group(title)


def _add(target: Any, leaf: Leaf) -> None:
    meta, default = leaf.meta, leaf.default
    text = _escape(leaf.help)
    hide = argparse.SUPPRESS if meta.get("hidden") else None
    if meta.get("positional"):
        target.add_argument(leaf.dest, nargs=meta.get("nargs"), metavar=meta.get("metavar"), help=text)
        return
    names = [leaf.flag, *meta.get("aliases", ())]
    kind, choices = leaf.kind
    if kind is bool:
        if getattr(leaf.owner, "FLAG_BOOLS", "switch") == "both":
            target.add_argument(*names, dest=leaf.dest, action=argparse.BooleanOptionalAction, default=bool(default),
                                help=hide or text)
        elif leaf.switched_off:  # a field that defaults to True is switched off: `report` → --no-report
            target.add_argument(*names, dest=leaf.dest, action="store_false", default=True,
                                help=hide or _escape(leaf.help if meta.get("help_final") else "do not " + leaf.help))
        else:
            target.add_argument(*names, dest=leaf.dest, action="store_true", help=hide or text)
        if meta.get("off"):  # a hidden spelling kept for old command lines
            target.add_argument(meta["off"], dest=leaf.dest, action="store_false", help=argparse.SUPPRESS)
        return
    shown = _default_text(leaf)
    if shown and not hide:
        text += f" (default {_escape(shown)})"
    kw: dict[str, Any] = dict(dest=leaf.dest, default=default, help=hide or text,
                              metavar=meta.get("metavar") or _metavar(choices))
    if meta.get("repeat"):  # tuple[X, ...]: each use of the flag parses one X (`--remove KIND`)
        item = typing.get_args(kind)[0] if typing.get_origin(kind) is tuple else kind
        kw.update(action="append", default=list(default or ()), type=_parser(leaf, item))
    else:
        kw.update(type=_parser(leaf, kind), choices=choices)
    if "const" in meta:
        kw.update(nargs="?", const=meta["const"])
    target.add_argument(*names, **kw)


def _parser(leaf: Leaf, kind: type) -> Callable[[str], Any]:
    parse = leaf.meta.get("parse")
    if parse is None:
        return kind
    name = leaf.flag

    def convert(text: str) -> Any:
        return parse(text, name)

    convert.__name__ = leaf.name  # argparse names the type in its own messages
    return convert


def _default_text(leaf: Leaf) -> str | None:
    """What --help says the default is: the value (through `show` for a list), else what the
    owner says it depends on (bench: `CPU 1, GPU 20`), else nothing."""
    d = leaf.default
    if d is not None and d != "" and d != ():
        return leaf.meta["show"](d) if leaf.meta.get("show") else show_value(d)
    hook = getattr(leaf.owner, "flag_default_text", None)
    return hook(leaf.name) if hook is not None else None


def show_value(v: Any) -> str:
    """A default as --help writes it: a float without a trailing `.0` (`15`, `0.03`, `120`)."""
    return f"{v:g}" if isinstance(v, float) else str(v)


def _metavar(choices: tuple[Any, ...] | None) -> str | None:
    return "{" + ",".join(map(str, choices)) + "}" if choices else None


def _escape(text: str) -> str:
    return text.replace("%", "%%")  # argparse %-formats help strings


# ---- back to a configuration -------------------------------------------------------------
def build(root: Any, args: argparse.Namespace, **overrides: Any) -> Any:
    """The configuration `root` with every leaf that is a flag taken from `args` (the others
    keep the root's defaults), then `overrides` (root fields). Each section is made with
    `dataclasses.replace`, so it validates; a refused value raises errors.ConfigError naming
    its path and flag (`study.train.dtype (--dtype) must be one of ...`)."""
    from trainprof.errors import ConfigError

    obj = _root(root)
    found = leaves(obj)
    values = {leaf.at: _value(getattr(args, leaf.dest)) for leaf in found if hasattr(args, leaf.dest)}
    prefix = tuple(p for p in getattr(type(obj), "PATH", "").split(".") if p)
    try:
        made = _rebuild(obj, (), prefix, values)
        return dataclasses.replace(made, **overrides) if overrides else made
    except ConfigError as e:
        raise e.with_flags({leaf.path: leaf.flag for leaf in found if not leaf.meta.get("positional")}) from None


def _value(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _rebuild(obj: Any, at: tuple[str, ...], path: tuple[str, ...], values: Mapping[tuple[str, ...], Any]) -> Any:
    from trainprof.errors import ConfigError

    changes = {}
    for f in dataclasses.fields(obj):
        meta = f.metadata.get(META, {})
        if meta.get("section"):
            sub = path if meta.get("flat") else (*path, f.name)
            changes[f.name] = _rebuild(getattr(obj, f.name), (*at, f.name), sub, values)
        elif (*at, f.name) in values:
            changes[f.name] = values[(*at, f.name)]
    try:
        return dataclasses.replace(obj, **changes)
    except ConfigError as e:
        raise e.within(".".join(path)) from None


def to_argv(cls: type, values: Mapping[str, Any]) -> list[str]:
    """Field values of `cls` → the flags that set them, sorted by name; None (unset) is left out.

    The inverse of `add_flags` + `build` for one class: parsing the result gives the same values."""
    meta = {f.name: f.metadata.get(META, {}) for f in dataclasses.fields(cls)}
    argv: list[str] = []
    for name in sorted(values):
        v = values[name]
        kind, _ = parser_type(cls, name)
        spelled = meta[name].get("flag") or flag(name)
        if kind is bool:
            argv.append(spelled if v else "--no-" + spelled[2:])
        elif v is not None:
            argv += [spelled, str(v)]
    return argv
