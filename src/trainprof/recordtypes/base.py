"""The base of every saved record and the one loader that reads them.

`load(path, Ettr)` reads a file the way every user file is read (bounded.read_json_bytes: a
regular file, a size cap, the string, whitespace and nesting limits checked as it is read)
and decodes it in one pass straight into the Struct (msgspec.json.decode(type=...): C speed,
types checked). A file that does not fit is one `InputError` line naming the file and the
field (`$.lost_s.startup`), exit code 2 (issue #19), never a traceback.
"""

from __future__ import annotations

import re
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


class Wire(Part, frozen=True, kw_only=True, omit_defaults=True):
    """A block of run.json typed after it was written as a dict, with the dict's wire form: every
    field either has no default (always written, null allowed), or defaults to None (written
    only with a value: None is left out, so an absent key stays absent), or to UNSET (both).
    (kw_only does not pass to subclasses: each declares it, so a required field may follow.)"""


class FrozenRecord(Record, frozen=True):
    """A saved file built by an analyser (Part's rules)."""


R = TypeVar("R", bound=Record)
T = TypeVar("T")


def readable(msg: str) -> str:
    """msgspec's "Expected `str`, got `null` - at `$.base.file`" → "... at `base.file`"."""
    return msg.replace("`int | float`", "a number").replace(" - at `$.", " at `").replace(" - at `$", " at `$")


class _Head(msgspec.Struct):
    schema: str


class _AnyHead(msgspec.Struct):
    """What a refusal needs to tell a wrong file from a bad field: the `schema` as it is written,
    kept as a slice of the text (msgspec.Raw, no copy) and every other field skipped unbuilt. A
    full untyped decode here cost 25x the file (a 100 MB run.json of `{}` with one bad field
    took 2.6 GB to refuse, issue #45)."""

    schema: msgspec.Raw = msgspec.Raw(b"null")


class _Kind(msgspec.Struct):
    kind: str = ""


def decode(path: Union[str, Path], data: bytes | bytearray, cls: type[R]) -> R:
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
        schema = _schema(path, data)
        if not isinstance(schema, str) or not schema.startswith(prefix):
            raise InputError(f"{path}: schema {schema!r} is not {prefix}N") from None
        raise InputError(f"{path}: {readable(str(e))}") from None
    except msgspec.DecodeError as e:
        raise InputError(f"{path}: not valid JSON ({e})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not valid UTF-8 text") from None
    except RecursionError:  # deeper than bounded.Shape lets through (cannot happen below 256)
        raise InputError(f"{path}: JSON nested too deep") from None
    raise InputError(f"{path}: schema {head.schema!r} is not {prefix}N")


def _schema(path: Union[str, Path], data: bytes | bytearray) -> object:
    """The `schema` field of a record that did not fit its type: a str, or a short stand-in
    for anything else (decoded only when short, so a huge value costs nothing)."""
    try:
        raw = msgspec.json.decode(data, type=_AnyHead).schema
    except msgspec.ValidationError:  # the document is not an object at all
        at = re.match(rb"[ \t\r\n]*", data).end()
        first = data[at:at + 1]
        kind = {b"[": "list", b'"': "str", b"t": "bool", b"f": "bool", b"n": "null"}.get(bytes(first), "number")
        raise InputError(f"{path}: expected a JSON object, found {kind}") from None
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        raise InputError(f"{path}: not valid JSON") from None
    if len(raw) > 200:
        return f"{bytes(raw)[:40].decode('utf-8', 'replace')}..."  # msgspec.Raw is a buffer, not a sequence
    return msgspec.json.decode(raw)


def load(path: Union[str, Path], cls: type[R], cap: int | None = None) -> R:
    """The record in `path`, read with every bound of bounded.py and checked against `cls`
    (its schema prefix is the `schema` default's, "trainprof.ettr/")."""
    from trainprof.bounded import read_json_bytes

    data = read_json_bytes(path, cap)  # its shape (strings, nesting, whitespace) checked as it is read
    if not data or data.isspace():  # (strip() would copy the whole file)
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
