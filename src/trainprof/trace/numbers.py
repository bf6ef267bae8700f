"""Numbers from a trace that trainprof cannot hold: the events carrying them are skipped.

Issue #33: `"pid": "99999999999999999999"` raised OverflowError while the columns were built,
and `"Input Dims": [[1e999, 2]]` a msgspec.ValidationError when the shape table was decoded
at the end of the read, on both reader paths. Both builders (columns.ColumnBuilder and
scanned.ScanBuilder) now drop such events, count them under OUT_OF_RANGE, and keep the rest.
"""

from __future__ import annotations

import msgspec

I64 = (-(2**63), 2**63)  # [lo, hi): the columns are int64
BAD_VALUE = -2  # the id of a shape value holding a number out of range: its events are skipped
OUT_OF_RANGE = "event with a number out of range (an int beyond int64 in pid/tid or a shape, a float beyond double)"


def value_ok(raw: bytes) -> bool:
    """A raw shape value ("Input Dims", ...) whose numbers trainprof can hold: msgspec refuses
    a float beyond double (1e999: it raised ValidationError at the end of the read, issue
    #33), and ints beyond int64 overflow the analyses' int64 arithmetic."""
    try:
        stack = [msgspec.json.decode(raw)]
    except msgspec.DecodeError:
        return False
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, int) and not isinstance(v, bool) and not I64[0] <= v < I64[1]:
            return False
    return True
