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
        except (TypeError, msgspec.EncodeError):
            pass
        else:
            return raw.decode("ascii") if raw.isascii() else _ascii(raw.decode("utf-8"))
    return json.dumps(finite(obj), indent=indent, sort_keys=sort_keys, allow_nan=False)


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
