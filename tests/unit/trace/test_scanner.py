"""The C scanner (trace/_scan.c + trace/scanned.py) gives exactly the pure-Python reader's Trace.

The scanner is an optional extension; where this machine has a C compiler the install must
have built it (a silent build failure would leave every user on the slow path), so its
absence fails here instead of skipping.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import struct
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainprof.trace import reader
from tests.extensions import require_built

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"
SCAN = require_built(reader._scan, "trainprof.trace._scan")


def flat(obj, path="trace"):
    """Every leaf of a Trace as (path, value), arrays as (dtype, shape, bytes): bitwise equality."""
    if isinstance(obj, np.ndarray):
        yield path, (str(obj.dtype), obj.shape, np.ascontiguousarray(obj).tobytes())
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            yield from flat(getattr(obj, f.name), f"{path}.{f.name}")
    elif isinstance(obj, dict):
        yield path + ".keys", list(obj)
        for k, v in obj.items():
            yield from flat(v, f"{path}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        yield path + ".len", len(obj)
        for i, v in enumerate(obj):
            yield from flat(v, f"{path}[{i}]")
    elif isinstance(obj, float) and math.isnan(obj):
        yield path, "nan"
    else:
        yield path, obj


def read_both(p: Path, monkeypatch) -> tuple[object, object, bool]:
    """(scanner's Trace, pure Trace, whether the scanner read the whole file itself). A file
    both readers refuse raises their InputError, once it is checked to be the same line."""
    used = []
    orig = reader._read

    def spy(path, builder):
        used.append(type(builder).__name__)
        return orig(path, builder)

    def outcome(**patch):
        with monkeypatch.context() as m:
            for name, value in patch.items():
                m.setattr(reader, name, value)
            try:
                return reader.read_trace(p), None
            except reader.InputError as e:
                return None, e

    fast, fast_error = outcome(_read=spy)
    pure, pure_error = outcome(_scan=None)
    assert str(fast_error) == str(pure_error), "the two readers refuse the file differently"
    if fast_error is not None:
        raise fast_error
    return fast, pure, used == ["ScanBuilder"]


def assert_same(a, b) -> None:
    fa, fb = dict(flat(a)), dict(flat(b))
    assert fa.keys() == fb.keys()
    diff = [k for k in fa if fa[k] != fb[k]]
    assert not diff, f"{len(diff)} fields differ, first: {diff[:5]}"


SHIPPED = sorted(p for p in DATA.rglob("*.json*") if p.suffix in (".json", ".gz"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(DATA)))
def test_shipped_traces_identical(path, monkeypatch):
    try:
        fast, pure, scanned = read_both(path, monkeypatch)
    except reader.InputError:  # an error-case fixture: both readers gave the same line (read_both)
        return
    assert_same(fast, pure)
    # every real trace is read by the scanner itself (ROCm's "bytes": "128" included); only
    # the hand-made edge-case file holds what it leaves to msgspec
    if "real" in path.parts:
        assert scanned, f"{path.name}: the scanner fell back to the pure path"


@pytest.mark.parametrize("text", [
    '{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2}, {"ph": "X", "ts": 3,',  # truncated
    '{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2}, {"ph": "X" "ts": 3}]}',  # a missing comma
    '{"traceEvents": {"ph": "X"}}',  # not a list
    '[{"ph": "X", "ts": 1, "dur": 2}, nul]',  # JSON Array Format, a bad literal
])
def test_refused_files_get_the_same_line(tmp_path, monkeypatch, text):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(reader.InputError, match=str(p).replace("\\", "\\\\")):
        read_both(p, monkeypatch)  # raises only after checking both readers' lines are equal


# ---------------------------------------------------------------------------------------- generated
INT64 = st.integers(-(2**63), 2**63 - 1)
NUMBER = st.one_of(INT64, st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False))
LAX = st.sampled_from(["128", "-5", "1e3", "1.0", "null", " 7", "0x10", "", "abc"])  # strings msgspec may coerce
TEXT = st.text(max_size=6)
ANY = st.one_of(st.none(), st.booleans(), NUMBER, TEXT, LAX, st.lists(st.integers(-(2**40), 2**40), max_size=4))
TYPED = {
    "ph": st.sampled_from(["X", "X", "X", "s", "f", "t", "M", "i", ""]),
    "cat": st.sampled_from(["kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "ac2g", None]),
    "name": st.one_of(st.sampled_from(["aten::mm", "ncclKernel_AllReduce", "Memcpy HtoD", "a\"b\\c\u00e9"]), TEXT),
    "pid": st.one_of(st.integers(-3, 9), st.sampled_from(["Spans", "12", "0x1f"])),
    "tid": st.one_of(st.integers(-3, 9), st.sampled_from(["PyTorch Profiler", "7"])),
    "ts": st.one_of(st.floats(0, 2e15, allow_nan=False), st.integers(0, 2**60), st.none()),
    "dur": st.one_of(st.floats(-5, 1e6, allow_nan=False), st.integers(-5, 10**6), st.none()),
    "id": st.one_of(st.integers(-2, 50), st.sampled_from(["0x1f", "010", "x"])),
    "bp": st.sampled_from(["e", None]),
}
ARGS = {
    "External id": INT64, "correlation": st.integers(-1, 100), "Ev Idx": st.integers(0, 5),
    "stream": st.one_of(st.integers(-1, 20), st.sampled_from(["0x0", "7", "010"])), "device": st.integers(-1, 3),
    "Python id": INT64, "Python parent id": st.one_of(st.none(), st.integers(0, 9)),
    "Input Dims": st.lists(st.lists(st.integers(0, 9), max_size=3), max_size=3), "Input type": st.lists(TEXT, max_size=2),
    "Concrete Inputs": st.lists(TEXT, max_size=2), "Collective name": st.sampled_from(["allreduce", None]),
    "Process Group Name": TEXT, "In msg nelems": st.integers(0, 10**9), "Group size": st.integers(1, 8),
    "Seq": st.one_of(st.integers(0, 5000), INT64),
    "dtype": st.sampled_from(["Float", None]), "bytes": st.one_of(st.integers(0, 2**40), st.sampled_from(["128"])),
    "memory bandwidth (GB/s)": st.floats(0, 3000, allow_nan=False),
    "grid": st.one_of(st.lists(st.integers(-(2**33), 2**33), max_size=4), st.just("grid(100,)"), st.none()),
    "block": st.lists(st.integers(1, 1024), min_size=3, max_size=3), "registers per thread": st.integers(0, 255),
    "shared memory": st.integers(0, 2**20), "est. achieved occupancy %": st.one_of(st.integers(0, 100), st.floats(0, 100)),
    "Fwd thread id": st.integers(0, 3),
}


@st.composite
def events(draw, odd: bool):
    """One event; odd=True also draws any JSON value for any field (types the schema rejects)."""
    ev = {}
    for k, s in TYPED.items():
        if draw(st.booleans()) or k in ("ph", "ts"):
            ev[k] = draw(st.one_of(s, ANY) if odd else s)
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from(sorted(ARGS)), max_size=6, unique=True))
        ev["args"] = {k: draw(st.one_of(ARGS[k], ANY) if odd else ARGS[k]) for k in keys}
    return ev


def write(tmp_path, evs, ascii_only: bool) -> Path:
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": evs, "deviceProperties": []}, ensure_ascii=ascii_only), encoding="utf-8")
    return p


# TRAINPROF_FUZZ_EXAMPLES=3000 for a longer hunt (as tests/fuzz; 3000 each passed on 2026-11-25)
SETTINGS = settings(max_examples=int(os.environ.get("TRAINPROF_FUZZ_EXAMPLES", "120")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@SETTINGS
@given(evs=st.lists(events(odd=False), max_size=40), ascii_only=st.booleans())
def test_generated_well_typed_traces_identical_and_scanned(tmp_path, monkeypatch, evs, ascii_only):
    fast, pure, scanned = read_both(write(tmp_path, evs, ascii_only), monkeypatch)
    assert_same(fast, pure)
    assert scanned  # every field of the schema in a type it declares (plus "128" for ints)


@SETTINGS
@given(evs=st.lists(events(odd=True), max_size=30), ascii_only=st.booleans())
def test_generated_odd_traces_identical(tmp_path, monkeypatch, evs, ascii_only):
    fast, pure, _ = read_both(write(tmp_path, evs, ascii_only), monkeypatch)
    assert_same(fast, pure)


def test_windows_span_batches(tmp_path, monkeypatch):
    """More events than a window and than a decode batch: ids interned per window, in order."""
    evs = [{"ph": "X" if i % 7 else "f", "cat": f"c{i % 5}", "name": f"op{i % 977}", "pid": 1, "tid": i % 3,
            "ts": i * 1.5, "dur": 1.0, "id": i, "args": {"Input Dims": [[i % 13]], "Input type": [str(i % 11)]}}
           for i in range(20000)]
    fast, pure, scanned = read_both(write(tmp_path, evs, True), monkeypatch)
    assert scanned
    assert_same(fast, pure)


def test_seq_read_alike_on_both_paths(tmp_path, monkeypatch):
    """`Seq` (a collective's number in its process group) on a record_param_comms op and on
    its NCCL kernel, as PyTorch and recent Kineto write it; a third collective without one."""
    coll = {"Collective name": "allreduce", "Process Group Name": "0", "In msg nelems": 1000, "dtype": "Float"}
    evs = [{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 1, "dur": 5,
            "args": {**coll, "Seq": 7}},
           {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
            "args": {**coll, "Seq": 9223372036854775807}},
           {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 7, "ts": 20, "dur": 5,
            "args": coll}]
    fast, pure, scanned = read_both(write(tmp_path, evs, True), monkeypatch)
    assert scanned
    assert_same(fast, pure)
    assert fast.collectives.seq.tolist() == [7, 2**63 - 1, -1]  # -1: not recorded


# ---------------------------------------------------------------------------------------- the scanner
def scan_one(event_json: str):
    sc = SCAN.Scanner()
    ok = sc.scan(("[" + event_json + "]").encode())
    return ok, sc


def x_record(sc) -> np.ndarray:
    from trainprof.trace.scanned import REC

    ph, x, _ = sc.take(len(sc))
    return np.frombuffer(x, dtype=REC)


@pytest.mark.parametrize("event", [
    '{"ph": "X", "ts": "12.5"}',  # a numeric string where a float is expected: msgspec's lax call
    '{"ph": "X", "args": {"correlation": 5.0}}',  # a float in an int field
    '{"ph": "X", "args": {"correlation": "1e3"}}',
    '{"ph": "X", "args": {"correlation": true}}',
    '{"ph": "X", "args": {"correlation": 9223372036854775808}}',  # beyond int64
    '{"ph": "X", "ph": "X"}',  # a repeated known key
    '{"ph": null}',
    '{"ph": "\\u0058"}',  # "X" spelled with an escape
    '{"p\\u0068": "X"}',  # a known key spelled with an escape: msgspec's call
    '{"ph": "X", "args": {"correlati\\u006fn": 5}}',
    '{"ph": "X", "name": "\\ud800"}',  # lone surrogate
    '{"ph": "X", "name": "a\x01b"}',  # control character
    '{"ph": "X", "name": 5}',
    '{"ph": "X", "args": [1]}',
    '{"ph": "X", "args": {"grid": [1, null, 3]}}',
    '{"ph": "X", "ts": 1e400}',
    '{"ph": "X", "ts": 01}',
    '{"ph": "X", "ts": 1.}',
    '{"ph": "X", "ts": .5}',
    '{"ph": "X", "ts": -}',
    '{"ph": "X", "args": {"correlation": 01}}',
    '{"ph": "X", "args": {"correlation": -}}',
    '{"ph": "X",}',
    '[1]',
    '{"ph": "X", "ts": 1',  # truncated (a wrong cut)
])
def test_scanner_declines(event):
    ok, sc = scan_one(event)
    assert ok is False and len(sc) == 0


def test_escape_in_a_value_does_not_taint_the_next_key():
    ok, sc = scan_one('{"name": "a\\nb", "ph": "X", "cat": "c\\"d", "ts": 1.5}')
    assert ok
    r = x_record(sc)[0]
    assert sc.strings[r["name"]] == "a\nb" and sc.strings[r["cat"]] == 'c"d' and r["ts"] == 1.5


def test_compact_keys_at_the_end_of_a_batch():
    """Keys shorter than a word, with fewer than 8 bytes left in the batch after them."""
    ok, sc = scan_one('{"ph":"X","ts":1}')
    assert ok and x_record(sc)[0]["ts"] == 1.0


def test_scanner_reads_fields():
    ok, sc = scan_one('{"ph": "X", "cat": "kernel", "name": "k\\u00e9", "pid": 0, "tid": "7", "ts": 1712195495519689.047,'
                      ' "dur": 53.090, "unknown": {"deep": [1, {"x": null}]}, "args": {"correlation": 42, '
                      '"bytes": "128", "grid": [1, 2, 3], "block": [4, 5], "stream": "0x0", "Input Dims": [[1, 2], []],'
                      ' "est. achieved occupancy %": 50, "Python parent id": null}}')
    assert ok
    strings = sc.strings
    r = x_record(sc)[0]
    assert strings[r["name"]] == "k\u00e9" and strings[r["cat"]] == "kernel" and strings[r["tid_s"]] == "7"
    assert r["ts"] == 1712195495519689.047 and r["dur"] == 53.09
    assert (r["correlation"], r["bytes"], r["pid"], r["python_parent_id"]) == (42, 128, 0, -1)
    assert (r["grid0"], r["grid1"], r["grid2"]) == (1, 2, 3) and r["block0"] == -1  # two values: not a triple
    assert strings[r["stream_s"]] == "0x0" and r["occupancy_pct"] == 50.0
    assert sc.values[r["dims"]] == b"[[1, 2], []]"  # the exact raw text, as msgspec.Raw keeps it


@pytest.mark.parametrize("text, value", [("0", 0), ("-0", 0), ("7", 7), ("-12", -12), ("99999999999999999", 10**17 - 1),
                                         ("123456789012345678", 123456789012345678),  # 18 digits: the general path
                                         ("9223372036854775807", 2**63 - 1), ("-9223372036854775808", -(2**63))])
def test_int_fields(text, value):
    ok, sc = scan_one('{"ph": "X", "args": {"correlation": %s}}' % text)
    assert ok and x_record(sc)[0]["correlation"] == value


def test_take_splits_phases():
    sc = SCAN.Scanner()
    assert sc.scan(b'[{"ph": "X", "ts": 1}, {"ph": "M"}, {"ph": "s", "id": 3, "ts": 2}, {"ph": "X", "ts": 4}]')
    ph, x, f = sc.take(3)
    assert len(sc) == 1 and len(x) == SCAN.RECORD_SIZE and len(f) == SCAN.RECORD_SIZE
    assert [sc.strings[i] for i in struct.unpack("3i", ph)] == ["X", "M", "s"]
    assert len(sc.take(1)[1]) == SCAN.RECORD_SIZE == 264  # 33 eight-byte words since Seq
    with pytest.raises(ValueError, match="out of range"):
        sc.take(1)  # nothing left
    with pytest.raises(TypeError, match="no arguments"):
        SCAN.Scanner(1)


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


# The pure path's numbers are msgspec's, which reads "-0" as the int 0 (so +0.0), unlike float().
@settings(max_examples=400, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(["%r", "%.17g", "%.3f", "%.6e", "%.0f", "%.20f"]))
def test_numbers_parse_as_msgspec_does(x, fmt):
    text = (fmt % x) if fmt != "%r" else repr(x)
    if "inf" in text or "nan" in text or len(text) > 100:
        return
    ok, sc = scan_one('{"ph": "X", "ts": %s}' % text)
    assert ok
    assert bits(x_record(sc)[0]["ts"]) == bits(msgspec.json.decode(text, type=float)), text


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 10**22), st.integers(0, 25), st.integers(-30, 30))
def test_decimal_digits_parse_as_msgspec_does(mantissa, point, exp):
    digits = str(mantissa)
    point = min(point, len(digits))
    text = (digits[: len(digits) - point] or "0") + ("." + digits[len(digits) - point:] if point else "")
    if exp:
        text += f"e{exp}"
    ok, sc = scan_one('{"ph": "X", "ts": %s}' % text)
    assert ok
    assert bits(x_record(sc)[0]["ts"]) == bits(msgspec.json.decode(text, type=float)), text


def test_int_or_str_column_reads_each_string_alone():
    """Both readers parse a string stream/flow id the same way whatever sits beside it
    (np.array alone read "010" as 10 beside ints but as -1 beside "0x0")."""
    from trainprof.trace.columns import int_or_str_column

    assert int_or_str_column(["010", 5]).tolist() == [-1, 5]
    assert int_or_str_column(["010", "0x0"]).tolist() == [-1, 0]
    assert int_or_str_column([None, 7, "12"]).tolist() == [-1, 7, 12]
