"""Bad input: one InputError (exit code 2) whose one-line message names the file."""

import gzip
from pathlib import Path

import pytest

from trainprof.errors import InputError, TrainprofError
from trainprof.trace import read_trace

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"


def _fails(path, *words):
    with pytest.raises(InputError) as info:
        read_trace(path)
    msg = str(info.value)
    assert info.value.exit_code == 2 and isinstance(info.value, TrainprofError)
    assert "\n" not in msg and str(path) in msg, msg
    for w in words:
        assert w in msg, msg
    return msg


def test_missing_path(tmp_path):
    _fails(tmp_path / "nope.json.gz", "no such file")


def test_directory(tmp_path):
    _fails(tmp_path, "directory")


def test_empty_file(tmp_path):
    p = tmp_path / "empty.json"
    p.write_bytes(b"")
    _fails(p, "empty file")


def test_whitespace_only_file(tmp_path):
    p = tmp_path / "blank.json"
    p.write_bytes(b" \n\t\n")
    _fails(p, "empty file")


def test_gzip_of_nothing(tmp_path):
    p = tmp_path / "empty.json.gz"
    p.write_bytes(gzip.compress(b""))
    _fails(p, "empty", "decompression")


def test_truncated_gzip(tmp_path):
    full = gzip.compress((DATA / "two_steps.json").read_bytes())
    p = tmp_path / "cut.json.gz"
    p.write_bytes(full[: len(full) // 2])
    _fails(p, "truncated gzip")


def test_corrupt_gzip(tmp_path):
    full = bytearray(gzip.compress((DATA / "two_steps.json").read_bytes()))
    full[len(full) // 2] ^= 0xFF
    full[len(full) // 2 + 1] ^= 0xFF
    p = tmp_path / "bad.json.gz"
    p.write_bytes(bytes(full))
    _fails(p, "gzip")


def test_truncated_json(tmp_path):
    p = tmp_path / "cut.json"
    p.write_bytes((DATA / "two_steps.json").read_bytes()[:500])
    _fails(p, "invalid JSON")


def test_invalid_json(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"traceEvents": [}')
    _fails(p, "invalid JSON")


def test_json_without_trace_events(tmp_path):
    p = tmp_path / "other.json"
    p.write_text('{"schemaVersion": 1, "deviceProperties": []}')
    _fails(p, "traceEvents")


def test_trace_events_not_a_list(tmp_path):
    p = tmp_path / "dict.json"
    p.write_text('{"traceEvents": {"ph": "X"}}')
    _fails(p, "'traceEvents' is not a list")


def test_top_level_not_an_object(tmp_path):
    p = tmp_path / "number.json"
    p.write_text("42")
    _fails(p, "not a trace")


def test_gzip_named_json_and_plain_named_gz_still_read(tmp_path):
    raw = (DATA / "two_steps.json").read_bytes()
    a = tmp_path / "really_gzip.json"
    a.write_bytes(gzip.compress(raw))
    b = tmp_path / "really_plain.json.gz"
    b.write_bytes(raw)
    assert len(read_trace(a)) == len(read_trace(b)) == 14
