"""The streaming reader (trace/stream.py) gives exactly what reading the file whole gives.

Every test compares `read_trace` on the streaming path, with pieces and batches made tiny so
that cuts land everywhere (inside strings, escapes, nested args, metadata), against the same
file read whole by the old one-buffer path (`reader._whole`), field by field.
"""

import dataclasses
import gzip
import json
import random
from pathlib import Path

import numpy as np
import pytest

from trainprof.errors import InputError
from trainprof.trace import columns, read_trace, reader, stream
from trainprof.trace.stream import Batch, Tail, Whole, chunks, open_trace, split

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"
META = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}],
        "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8}, "displayTimeUnit": "ms"}
# Names that look like event boundaries, escapes, quotes and brackets: a splitter that does not
# track strings cuts inside them.
TRICKY = ['a}, {\\"ph\\": \\"X\\"}', 'quote \\" }, { brace', 'back\\\\slash}', "[{]}", "tab\\t}\\n,\\n{", "ünï", "\\u007d, {"]


def _events(n: int, seed: int = 0) -> list[str]:
    """n events as JSON texts: ops with shapes, kernels with launch config, flows, instants,
    metadata, and args holding arrays of objects (`}, {` that is not between events)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        ts = 1000 + 10 * i
        r = rnd.random()
        name = rnd.choice(TRICKY) if r < 0.1 else f"aten::op{rnd.randrange(50)}"
        if r < 0.45:
            dims = json.dumps([[rnd.randrange(8), 4], []])
            args = f'{{"External id": {i}, "Ev Idx": {i}, "Input Dims": {dims}, "Input type": ["float", ""]}}'
            out.append(f'{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": 10, "tid": 11, "ts": {ts}, '
                       f'"dur": 5, "args": {args}}}')
        elif r < 0.6:
            out.append(f'{{"ph": "X", "cat": "kernel", "name": "k{rnd.randrange(9)}", "pid": 0, "tid": 7, "ts": {ts},'
                       f' "dur": 3, "args": {{"External id": {i}, "correlation": {i}, "device": 0, "stream": 7, '
                       f'"grid": [{rnd.randrange(1, 9)}, 1, 1], "block": [128, 1, 1], "registers per thread": 32, '
                       f'"nested": [{{"a": 1}}, {{"b": [{{"c": "}}, {{"}}]}}]}}}}')
        elif r < 0.75:
            cat = rnd.choice(["ac2g", "fwdbwd"])  # categories first seen in flows, mid-file
            out.append(f'{{"ph": "{rnd.choice("sf")}", "id": {i}, "pid": 10, "tid": 11, "ts": {ts}, "cat": "{cat}", '
                       f'"name": "{cat}", "bp": "e"}}')
        elif r < 0.85:
            out.append(f'{{"name": "[memory]", "ph": "i", "s": "t", "pid": 10, "tid": 11, "ts": {ts}, '
                       f'"args": {{"Bytes": 512, "Addr": {i}}}}}')
        elif r < 0.9:
            out.append('{"ph": "M", "name": "thread_name", "pid": 10, "tid": 11, "args": {"name": "t}, {x"}}')
        else:
            out.append(f'{{"ph": "X", "cat": "python_function", "name": "f.py({i}): g", "pid": 10, "tid": 11, '
                       f'"ts": {ts}, "dur": 1, "args": {{"Python id": {i}, "Python parent id": null}}}}')
    return out


def _doc(events: list[str], *, meta_after: bool = False, sep: str = ",\n  ", array: bool = False) -> bytes:
    body = "[\n  " + sep.join(events) + "\n  ]"
    if array:
        return body.encode()
    meta = json.dumps(META, indent=2)[1:-1].strip()
    if meta_after:
        return f'{{"traceEvents": {body},\n{meta},\n"more": [{{"x": 1}}, {{"y": "]}}"}}]\n}}'.encode()
    return f'{{\n{meta},\n"traceEvents": {body}\n}}'.encode()


def _whole(path: Path, monkeypatch):
    """The trace read the old way: the whole document in one buffer."""
    with monkeypatch.context() as m:
        m.setattr(reader, "split", lambda pieces, *a: (w for w in [Whole(bytearray(b"".join(pieces)))]))
        return read_trace(path)


def _streamed(path: Path, monkeypatch, *, batch: int, chunk: int):
    with monkeypatch.context() as m:
        if chunk < 1 << 14:  # thousands of tiny pieces: the thread's handoffs would dominate
            m.setattr(reader, "prefetch", lambda items, depth=2: items)
        m.setattr(stream, "BATCH_BYTES", batch)
        m.setattr(stream, "CHUNK", chunk)
        m.setattr(stream, "IN_CHUNK", chunk)
        m.setattr(columns, "BLOCK_BYTES", 256)  # many column blocks too
        return read_trace(path)


def _assert_same(a, b):
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "path":
            continue
        if dataclasses.is_dataclass(x):
            for g in dataclasses.fields(x):
                _eq(getattr(x, g.name), getattr(y, g.name), f"{f.name}.{g.name}")
        else:
            _eq(x, y, f.name)


def _eq(x, y, what):
    if isinstance(x, np.ndarray):
        assert x.dtype == y.dtype and x.shape == y.shape, what
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), what
    else:
        assert x == y, what


@pytest.mark.parametrize("meta_after", [False, True])
@pytest.mark.parametrize("gz", [False, True])
def test_streamed_equals_whole(tmp_path, monkeypatch, meta_after, gz):
    for n, sizes in [(9000, [(1000, 333), (1 << 14, 1 << 16), (stream.BATCH_BYTES, stream.CHUNK)]), (800, [(64, 7)])]:
        raw = _doc(_events(n), meta_after=meta_after)  # 9000 events: more than one columns.WINDOW
        p = tmp_path / ("t.json.gz" if gz else "t.json")
        p.write_bytes(gzip.compress(raw) if gz else raw)
        ref = _whole(p, monkeypatch)
        assert len(ref.flows) and ref.rank == 3 and ref.device_name == "NVIDIA H100 80GB HBM3"
        assert ref.phase_counts.keys() == {"X", "s", "f", "i", "M"}
        for batch, chunk in sizes:
            _assert_same(_streamed(p, monkeypatch, batch=batch, chunk=chunk), ref)


def test_default_settings_match_whole_on_real_files(monkeypatch):
    for name in ("two_steps.json", "legacy.json", "edge_cases.json", "ns_timestamps.json", "idle_causes.json"):
        _assert_same(read_trace(DATA / name), _whole(DATA / name, monkeypatch))
        _assert_same(_streamed(DATA / name, monkeypatch, batch=16, chunk=5), _whole(DATA / name, monkeypatch))


@pytest.mark.parametrize("sep", [",", ", ", "\n,\n", " ,\t"])
def test_separators_and_chrome_array_format(tmp_path, monkeypatch, sep):
    for array in (False, True):
        p = tmp_path / "t.json"
        p.write_bytes(_doc(_events(600, seed=1), sep=sep, array=array))
        ref = _whole(p, monkeypatch)
        assert (ref.notes == ("JSON Array Format trace: no metadata",)) == array
        _assert_same(_streamed(p, monkeypatch, batch=50, chunk=13), ref)


def test_batches_are_cut_between_events(tmp_path, monkeypatch):
    """Cuts land between events, and a guessed cut inside a string or nested value is
    carried into the next batch: the batches plus separators are the array's exact bytes."""
    raw = _doc(_events(300, seed=2))
    p = tmp_path / "t.json"
    p.write_bytes(raw)
    monkeypatch.setattr(stream, "BATCH_BYTES", 40)
    monkeypatch.setattr(stream, "CHUNK", 11)
    f, first = open_trace(p)
    items = list(split(chunks(p, f, first)))
    *batches, tail = items
    assert all(isinstance(b, Batch) for b in batches) and isinstance(tail, Tail) and len(batches) > 100
    start = raw.index(b"[", raw.index(b'"traceEvents"')) + 1
    assert tail.prefix == raw[:start]
    rebuilt = b"".join(b.json[1:-1] + b.sep for b in batches) + tail.rest
    assert rebuilt == raw[start:]
    for b in batches:
        assert raw[b.offset : b.offset + len(b.json) - 2] == b.json[1:-1]
    # Some guesses fall inside strings or nested args: the reader carries those over.
    wrong = 0
    for b in batches:
        try:
            json.loads(b.json)
        except ValueError:
            wrong += 1
    assert wrong > 0


def test_metadata_prefix_larger_than_a_piece(tmp_path, monkeypatch):
    meta = {"deviceProperties": [{"id": i, "name": "GPU ]}[{\\\"", "numSms": i} for i in range(200)],
            "distributedInfo": {"rank": 1, "world_size": 2}, "traceName": "x" * 5000, "n": -1.5e3, "t": True}
    raw = json.dumps({**meta, "traceEvents": [json.loads(e) for e in _events(200, seed=3)], "after": None}).encode()
    p = tmp_path / "t.json"
    p.write_bytes(raw)
    ref = _whole(p, monkeypatch)
    assert len(ref.devices) == 200 and ref.rank == 1
    _assert_same(_streamed(p, monkeypatch, batch=100, chunk=17), ref)


@pytest.mark.parametrize("text", [
    '{"a": {"traceEvents": [1]}}',  # only nested: not a trace
    '{"traceEvents": {"ph": "X"}}',
    '{"traceEvents": null}',
    '{"x": 1 "traceEvents": []}',
    '{"traceEvents": [{"ph": "X"}, {"ph": "X"}',
    '{"traceEvents": [{"ph": "X"}, {"ph": "X" "cat": "k"}, {"ph": "i"}]}',
    '{"traceEvents": [{"ph": "X"}]} trailing',
    '[{"ph": "X"}, {"ph": "X"}] [',
    "42",
    "\ufeff  ",
])
def test_errors_are_those_of_the_whole_read(tmp_path, monkeypatch, text):
    p = tmp_path / "bad.json"
    p.write_bytes(text.encode())
    with pytest.raises(InputError) as whole:
        _whole(p, monkeypatch)
    for batch, chunk in [(1, 1), (8, 3), (stream.BATCH_BYTES, stream.CHUNK)]:
        with pytest.raises(InputError) as streamed:
            _streamed(p, monkeypatch, batch=batch, chunk=chunk)
        assert str(streamed.value) == str(whole.value)


def test_invalid_json_deep_in_the_file_names_its_byte(tmp_path, monkeypatch):
    raw = bytearray(_doc(_events(3000, seed=4)))
    bad = raw.index(b'"ph": "X"', len(raw) // 2)
    raw[bad + 5] = ord("!")  # "ph"! "X"
    p = tmp_path / "bad.json"
    p.write_bytes(bytes(raw))
    with pytest.raises(InputError) as whole:
        _whole(p, monkeypatch)
    assert f"(byte {bad + 5})" in str(whole.value)
    for batch in (64, 4096, stream.BATCH_BYTES):
        with pytest.raises(InputError) as streamed:
            _streamed(p, monkeypatch, batch=batch, chunk=1000)
        assert str(streamed.value) == str(whole.value)


@pytest.fixture(params=["isal", "zlib"])
def inflater(request, monkeypatch):
    """Both inflate paths: ISA-L's where its wheel is installed (the default), zlib without it."""
    import zlib

    if request.param == "zlib":
        monkeypatch.setattr(stream, "_inflate", zlib)
        monkeypatch.setattr(stream, "_INFLATE_ERRORS", (zlib.error,))
    else:
        isal_zlib = pytest.importorskip("isal.isal_zlib")
        monkeypatch.setattr(stream, "_inflate", isal_zlib)
        monkeypatch.setattr(stream, "_INFLATE_ERRORS", (zlib.error, isal_zlib.error))
    return request.param


def test_isal_is_the_default_where_installed():
    isal_zlib = pytest.importorskip("isal.isal_zlib")
    assert stream._inflate is isal_zlib


@pytest.mark.parametrize("where", ["crc", "size", "middle"])
def test_a_damaged_member_is_a_gzip_error_on_both_paths(tmp_path, inflater, where):
    """CRC-32 and ISIZE are checked by both inflaters (ISA-L names both "Incorrect checksum")."""
    gz = bytearray(gzip.compress(_doc(_events(300, seed=9))))
    gz[{"crc": -8, "size": -1, "middle": len(gz) // 2}[where]] ^= 0x01
    p = tmp_path / "bad.json.gz"
    p.write_bytes(bytes(gz))
    with pytest.raises(InputError, match="gzip"):
        read_trace(p)


def test_corrupt_gzip_is_reported_as_gzip_even_after_bad_json(tmp_path, inflater):
    raw = _doc(_events(40000, seed=5))
    gz = bytearray(gzip.compress(raw))
    for i in range(len(gz) // 3, len(gz) // 3 + 8):
        gz[i] ^= 0x55
    p = tmp_path / "bad.json.gz"
    p.write_bytes(bytes(gz))
    with pytest.raises(InputError) as info:
        read_trace(p)
    assert "gzip" in str(info.value)


def test_truncated_gzip_of_a_large_file(tmp_path, inflater):
    gz = gzip.compress(_doc(_events(40000, seed=6)))
    p = tmp_path / "cut.json.gz"
    p.write_bytes(gz[: len(gz) * 2 // 3])
    with pytest.raises(InputError, match="truncated gzip"):
        read_trace(p)


def test_bom_split_across_pieces(tmp_path, monkeypatch):
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + (DATA / "two_steps.json").read_bytes())
    ref = read_trace(DATA / "two_steps.json")
    for chunk in (1, 2, 3, 4):
        _assert_same(_streamed(p, monkeypatch, batch=32, chunk=chunk), ref)


def test_multi_member_gzip_with_padding(tmp_path, monkeypatch, inflater):
    raw = _doc(_events(500, seed=7))
    p = tmp_path / "multi.json.gz"
    p.write_bytes(gzip.compress(raw[:777]) + b"\0" * 10 + gzip.compress(raw[777:]) + b"\0" * 3)
    q = tmp_path / "one.json"
    q.write_bytes(raw)
    _assert_same(_streamed(p, monkeypatch, batch=100, chunk=50), _whole(q, monkeypatch))


def test_gunzip_pieces_are_the_exact_bytes(tmp_path, monkeypatch, inflater):
    """Members cut anywhere, zero padding, output and input pieces of any size; a file cut
    short is a gzip error, or (cut between members) a shorter document."""
    raw = _doc(_events(200, seed=8))
    p = tmp_path / "t.json.gz"
    rnd = random.Random(8)
    for _ in range(30 if inflater == "isal" else 10):  # zlib: the fallback, checked lighter (suite time)
        cuts = sorted(rnd.sample(range(1, len(raw)), rnd.randrange(0, 4)))
        parts = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)])]
        blob = b"".join(gzip.compress(x) + b"\0" * rnd.randrange(0, 5) for x in parts)
        p.write_bytes(blob)
        for out_size in (1, 7, 1 << 20):
            monkeypatch.setattr(stream, "CHUNK", out_size)
            monkeypatch.setattr(stream, "IN_CHUNK", rnd.choice([1, 3, 50, 1 << 20]))
            f, first = open_trace(p)
            assert b"".join(chunks(p, f, first)) == raw
        p.write_bytes(blob[: rnd.randrange(1, len(blob))])
        try:
            f, first = open_trace(p)
            assert raw.startswith(b"".join(chunks(p, f, first)))
        except InputError as e:
            assert "gzip" in str(e)


def test_prefetch_hands_over_items_and_errors_in_order():
    def gen():
        yield 1
        yield 2
        raise InputError("x: boom")

    out = []
    with pytest.raises(InputError, match="boom"):
        for v in stream.prefetch(gen(), depth=1):
            out.append(v)
    assert out == [1, 2]
    # A consumer that stops early stops the thread (close joins it).
    it = stream.prefetch(iter(range(10**9)), depth=2)
    assert next(it) == 0
    it.close()
