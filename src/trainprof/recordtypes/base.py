"""The base of every saved record and the one loader that reads them.

`load(path, Ettr)` reads a file the way every user file is read (bounded.read_json_bytes: a
regular file, a size cap, the string, whitespace and nesting limits checked as it is read)
and decodes it in one pass straight into the Struct (msgspec.json.decode(type=...): C speed,
types checked). A file that does not fit is one `InputError` line naming the file and the
field (`$.lost_s.startup`), exit code 2 (issue #19), never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar, Union

import msgspec

from trainprof.errors import InputError

# A number as our writers produce it. JSON does not tell 3 from 3.0, but a reader that
# re-renders a record would: keeping the int where one was written keeps the text the same.
Num = Union[int, float]


class Record(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """A saved file: `schema` first ("trainprof.<kind>/<version>"), then the fields. Unknown
    fields are ignored, so a record from a newer trainprof still loads here."""

    schema: str


class Block(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """A nested part of a record (same leniency as Record)."""


class Part(Block, frozen=True):
    """A part an analyser returns, immutable once built: a later stage that adds to it (the
    findings of a rank, the Nsight Compute block of a job) makes a new one with
    `msgspec.structs.replace` (a shallow copy), so what one stage returned never changes
    under another. Built by the analyser with its fields, not converted from a dict: the
    constructor refuses a field the Struct lacks, so nothing an analyser computes can be
    dropped on the way to the file."""


class FrozenRecord(Record, frozen=True):
    """A saved file built by an analyser (Part's rules)."""


R = TypeVar("R", bound=Record)
T = TypeVar("T")


def readable(msg: str) -> str:
    """msgspec's "Expected `str`, got `null` - at `$.base.file`" → "... at `base.file`"."""
    return msg.replace("`int | float`", "a number").replace(" - at `$.", " at `").replace(" - at `$", " at `$")


class _Head(msgspec.Struct):
    schema: str


class _Kind(msgspec.Struct):
    kind: str = ""


def decode(path: Union[str, Path], data: bytes, cls: type[R]) -> R:
    """`data` (the bytes of `path`) as a `cls`, or one InputError line naming `path`. The
    schema is checked first, so a wrong file (a run.json given for tune.json) says so before
    any field does; the head costs one skimming parse (msgspec skips what _Head lacks)."""
    prefix = prefix_of(cls)
    try:
        head = msgspec.json.decode(data, type=_Head)
        if head.schema.startswith(prefix):
            variants = getattr(cls, "VARIANTS", None)  # a record whose fields depend on its `kind` (bench)
            if variants:
                cls = variants.get(msgspec.json.decode(data, type=_Kind).kind, cls)
            return msgspec.json.decode(data, type=cls)
    except msgspec.ValidationError as e:
        doc = _plain(path, data)
        if not isinstance(doc, dict):
            raise InputError(f"{path}: expected a JSON object, found {type(doc).__name__}") from None
        if not str(doc.get("schema", "")).startswith(prefix):
            raise InputError(f"{path}: schema {doc.get('schema')!r} is not {prefix}N") from None
        raise InputError(f"{path}: {readable(str(e))}") from None
    except msgspec.DecodeError as e:
        raise InputError(f"{path}: not valid JSON ({e})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not valid UTF-8 text") from None
    except RecursionError:  # deeper than bounded.Shape lets through (cannot happen below 256)
        raise InputError(f"{path}: JSON nested too deep") from None
    raise InputError(f"{path}: schema {head.schema!r} is not {prefix}N")


def _plain(path: Union[str, Path], data: bytes) -> object:
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        raise InputError(f"{path}: not valid JSON") from None


def load(path: Union[str, Path], cls: type[R], cap: int | None = None) -> R:
    """The record in `path`, read with every bound of bounded.py and checked against `cls`
    (its schema prefix is the `schema` default's, "trainprof.ettr/")."""
    from trainprof.bounded import read_json_bytes

    data = read_json_bytes(path, cap)  # its shape (strings, nesting, whitespace) checked as it is read
    if not data.strip():
        raise InputError(f"{path}: empty file")
    return decode(path, data, cls)


def prefix_of(cls: type[Record]) -> str:
    """"trainprof.ettr/" for a Record whose schema defaults to "trainprof.ettr/1"."""
    default = next((f.default for f in msgspec.structs.fields(cls) if f.name == "schema"), None)
    if not isinstance(default, str) or "/" not in default:
        raise TypeError(f"{cls.__name__}: a Record needs a `schema` default such as 'trainprof.x/1'")
    return default.rsplit("/", 1)[0] + "/"


def known(v: object) -> bool:
    """A field that holds a value: neither absent from the file (UNSET) nor null."""
    return v is not None and v is not msgspec.UNSET


def as_struct(obj: object, cls: type[T]) -> T:
    """`obj` as a `cls`: an analyser's dict is converted (one pass; a block of the wrong
    shape fails at its path, `$.idle_breakdown.gaps`), a `cls` or None passes as it is.
    Measured: 0.02 ms for the 2-rank DDP trace's rank (untyped blocks are kept by reference)."""
    return msgspec.convert(obj, cls) if isinstance(obj, dict) else obj


def or_default(v: object, default: object) -> object:
    """`v`, or `default` where the field holds no value (absent: UNSET, or null)."""
    return v if known(v) else default
