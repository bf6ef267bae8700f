"""Issue #19, bounded reading: whatever a user passes as a trace, read_trace returns a Trace
or raises one InputError naming the file, in bounded memory and time."""

from __future__ import annotations

import gzip
import os
import threading

import pytest

from trainprof.bounded import Shape, max_bytes
from trainprof.errors import InputError, UsageError
from trainprof.trace import read_trace

EVENT = '{"ph": "X", "cat": "cpu_op", "name": "%s", "pid": 1, "tid": 1, "ts": %s, "dur": 2}'


def _refused(path, *words):
    with pytest.raises(InputError) as info:
        read_trace(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(str(path)), msg
    for w in words:
        assert w in msg, msg
    return msg


def test_dev_zero_is_refused_at_once():
    # /dev/zero is a character device: refused by fstat before one byte is read (it used
    # to be read whole: 13.6 GB RSS in 20 s).
    _refused("/dev/zero", "device", "not a regular file")


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(target=lambda: done.append(pytest.raises(InputError, read_trace, fifo)), daemon=True)
    t.start()
    t.join(5)  # with no writer, a blocking open() would wait forever
    assert done, "read_trace blocked on a FIFO"
    assert "FIFO" in str(done[0].value)


def test_folder_where_a_file_is_expected(tmp_path):
    _refused(tmp_path, "folder")


def test_symlink_loop_is_named_as_such(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.symlink_to(b)
    b.symlink_to(a)
    _refused(a, "symbolic link")


def test_gzip_bomb_stops_at_the_decompressed_cap(tmp_path, monkeypatch):
    # 64 MiB of NULs compress to ~64 KB; with a 1 MiB cap the reader must stop long before.
    # (NULs are not '{' either, so the first-byte check would also stop it; a '{"a":"'
    # prefix makes the cap the only thing that can.)
    p = tmp_path / "bomb.json.gz"
    p.write_bytes(gzip.compress(b'{"a": "' + b" " * (64 << 20), compresslevel=1))
    monkeypatch.setenv("TRAINPROF_MAX_TRACE_BYTES", "1M")
    assert max_bytes() == 1 << 20
    _refused(p, "more than 1 MiB", "TRAINPROF_MAX_TRACE_BYTES")


def test_bad_cap_setting_is_a_usage_error(monkeypatch):
    monkeypatch.setenv("TRAINPROF_MAX_TRACE_BYTES", "lots")
    with pytest.raises(UsageError, match="TRAINPROF_MAX_TRACE_BYTES"):
        max_bytes()


def test_not_json_is_refused_after_the_first_piece(tmp_path):
    p = tmp_path / "zeros.json"
    p.write_bytes(b"\x00" * 100)
    _refused(p, "not a trace", "binary data")
    p.write_bytes(b"name,dur\nk,1\n")
    _refused(p, "not a trace", "name,dur")


def test_bytes_before_trace_events_are_capped(tmp_path, monkeypatch):
    from trainprof.trace import stream

    monkeypatch.setattr(stream, "PREFIX_CAP", 1 << 16)
    p = tmp_path / "meta.json"
    p.write_text('{"junk": "' + "x" * (1 << 18) + '", "traceEvents": []}')
    _refused(p, 'before "traceEvents"')


@pytest.mark.parametrize("depth", [300, 5000])
def test_deep_nesting_is_one_line(tmp_path, depth):
    p = tmp_path / "deep.json"
    # in the metadata (the prefix scanner counts levels) ...
    p.write_text('{"m": ' + "[" * depth + "]" * depth + ', "traceEvents": []}')
    _refused(p, "nested")
    # ... and in an event's args (the decoder recurses: RecursionError at ~1000 levels)
    p.write_text('{"traceEvents": [{"ph": "X", "args": {"a": ' + "[" * depth * 4 + "]" * depth * 4 + "}}]}")
    _refused(p, "nested")
    # ... and as a bare array
    p.write_text("[" * depth * 4 + "]" * depth * 4)
    _refused(p, "nested")


def test_shape_counts_depth_without_recursion(monkeypatch):
    # [ {"a": [ "[[[" : 3 levels open; the brackets inside the string do not count
    s = Shape("x")
    s.feed(b'[{"a": ["[[["')
    assert s.depth == 3 and s.string == -1
    monkeypatch.setenv("TRAINPROF_MAX_JSON_DEPTH", "100000")
    s = Shape("x")
    s.feed(b"[" * 100_000)
    assert s.depth == 100_000


def test_invalid_utf8_is_replaced_and_counted(tmp_path):
    p = tmp_path / "latin1.json"
    body = ",".join([EVENT % ("caf\xe9", 1), EVENT % ("ok", 5), EVENT % ("\xff\xfe", 9)])
    p.write_bytes(('{"traceEvents": [' + body + "]}").encode("latin-1"))
    tr = read_trace(p)
    # three bad bytes: 0xe9 (a lead byte with no continuation), 0xff and 0xfe
    assert len(tr) == 3
    assert "caf\ufffd" in tr.names
    assert any("replaced 3 invalid UTF-8" in n for n in tr.notes), tr.notes


def test_valid_multibyte_split_across_pieces_is_kept(tmp_path, monkeypatch):
    from trainprof.trace import reader, stream

    monkeypatch.setattr(stream, "CHUNK", 7)
    monkeypatch.setattr(stream, "IN_CHUNK", 7)
    monkeypatch.setattr(reader, "prefetch", lambda items, depth=2: items)
    p = tmp_path / "cjk.json"
    p.write_text('{"traceEvents": [' + EVENT % ("注意力", 1) + "]}", encoding="utf-8")
    tr = read_trace(p)
    assert "注意力" in tr.names and not any("UTF-8" in n for n in tr.notes)


def test_empty_json_array_is_not_a_trace(tmp_path):
    p = tmp_path / "empty.json"
    p.write_text("[ ]")
    _refused(p, "empty JSON array")


def test_one_absurd_timestamp_does_not_switch_to_ns(tmp_path):
    # two events at ts 10 and 20 µs and one at 1e300: the majority is µs, so durations stay
    # 2 µs (read as ns they would become 0.002 µs)
    p = tmp_path / "t.json"
    p.write_text('{"traceEvents": [' + ",".join([EVENT % ("a", 10), EVENT % ("b", 20), EVENT % ("c", "1e300")]) + "]}")
    tr = read_trace(p)
    assert tr.meta.time_unit == "us" and sorted(tr.dur_us.tolist()) == [2.0, 2.0, 2.0]
