"""Strict JSON text of a record: what every saved file and `--json` print is encoded with.

NaN and ±Infinity (a diverged loss) become null, since JSON has no such numbers; a msgspec
Struct, a str subclass (torch's TorchVersion) and a numpy scalar encode as json.dumps would
write their values; the text is json.dumps's (indent 2, ASCII).
"""

from __future__ import annotations


def finite(obj: object) -> object:
    """`obj` with every NaN/±Infinity float replaced by None (JSON has no such numbers;
    json.dumps would write the bare words `NaN`/`Infinity`, which strict readers refuse)."""
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def dumps(obj: object, indent: int | None = 2, sort_keys: bool = False) -> str:
    """Strict JSON text of a record: non-finite floats become null (see `finite`).

    Indented records go through msgspec (which writes NaN/±Infinity as null itself): 2 ms
    instead of 45 ms for a 1 MB analysis.json. Its text is json.dumps's (same separators
    and order, non-ASCII escaped so the output stays ASCII) except floats in their shortest
    form (1e16, not 1e+16); a record msgspec cannot encode takes the json.dumps path. A
    str subclass (torch's TorchVersion) is written as its string and a numpy scalar as its
    Python number, so a typed record (a msgspec Struct, which json.dumps cannot write) that
    holds one still encodes."""
    import json

    if indent == 2 and not sort_keys:
        import msgspec

        try:
            raw = msgspec.json.format(msgspec.json.encode(obj, enc_hook=encode_hook), indent=2)
        except UnicodeEncodeError:  # a lone surrogate: a file name that is not UTF-8
            return dumps(without_surrogates(obj), indent, sort_keys)
        except (TypeError, msgspec.EncodeError):
            pass
        else:
            return raw.decode("ascii") if raw.isascii() else _ascii(raw.decode("utf-8"))
    return json.dumps(without_surrogates(finite(obj)), indent=indent, sort_keys=sort_keys, allow_nan=False)


_SURROGATE = None


def without_surrogates(obj: object) -> object:
    """`obj` with every lone surrogate in its strings (keys too) written as the byte it stands
    for, `\\xff` (controls.visible's spelling): a path that is not UTF-8 reaches Python with its
    bytes as U+DC80-U+DCFF (PEP 383), which no UTF-8 text holds, and json.dumps would write
    them as `\\udcff` escapes that strict readers (ours) refuse (#45). Structs become dicts."""
    import re

    global _SURROGATE
    if _SURROGATE is None:
        _SURROGATE = re.compile("[\ud800-\udfff]")
    if isinstance(obj, str):
        if not _SURROGATE.search(obj):
            return obj
        return _SURROGATE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}" if 0xDC80 <= ord(m.group()) <= 0xDCFF
                              else f"\\u{ord(m.group()):04x}", obj)
    if isinstance(obj, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [without_surrogates(v) for v in obj]
    if hasattr(obj, "__struct_fields__"):  # a msgspec Struct
        import msgspec

        return without_surrogates(msgspec.to_builtins(obj, enc_hook=encode_hook))
    return obj


def encode_hook(o: object) -> object:
    """msgspec's hook for what it does not encode itself: str and number subclasses and
    numpy scalars, as json.dumps would write them."""
    if isinstance(o, str):
        return str(o)
    if isinstance(o, bool):
        return bool(o)
    if isinstance(o, int):
        return int(o)
    if isinstance(o, float):
        return float(o)
    item = getattr(o, "item", None)  # numpy scalars
    if callable(item) and getattr(o, "shape", None) == ():
        return item()
    raise TypeError(f"cannot encode {type(o).__name__}")


def _ascii(text: str) -> str:
    """JSON text with every non-ASCII character as json.dumps writes it (\\u00e9, a
    surrogate pair above U+FFFF). Outside strings JSON is ASCII, so this only touches strings."""
    import re

    def esc(m: re.Match) -> str:
        c = ord(m.group())
        if c < 0x10000:
            return f"\\u{c:04x}"
        c -= 0x10000
        return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"

    return re.sub(r"[^\x00-\x7f]", esc, text)
