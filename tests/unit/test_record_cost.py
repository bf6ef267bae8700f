"""Records and journals are read in memory bounded by a stated multiple of their size (issue
#45: a 100 MB run.json of `{}` took 2.6 GB to refuse, a journal of `{}` lines 5 GB). The
estimate bounded.decode_cost must be an upper bound on what decoding really allocates (measured
here with tracemalloc on planted shapes), real records must pass it with room, and storms of
tiny items must be refused before they are decoded, one line naming the file."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import msgspec
import pytest

from trainprof import jsonl
from trainprof.bounded import COST_FACTOR, decode_cost, read_json_bytes
from trainprof.errors import InputError
from trainprof.recordtypes.run import load_run

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"
UNITS = ["{}", "[]", '""', '"abcdefgh"', "0", "1e5", "123456789", "0.5", '{"a":0}', '{"a":[]}', "[0,1]", "null",
         '{"abcdef":"x","b":1.5,"c":[1,2],"d":{}}']


@pytest.mark.parametrize("unit", UNITS)
def test_the_estimate_bounds_what_decoding_allocates(unit):
    text = ("[" + ",".join([unit] * 20_000) + "]").encode()
    tracemalloc.start()
    try:
        obj = msgspec.json.decode(text)
        used = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert obj and used <= decode_cost(text), (unit, used, decode_cost(text))


def test_real_records_and_journals_pass_with_room():
    for p in sorted(REPORTS.rglob("*.json")):
        text = json.dumps(json.loads(p.read_text()), separators=(",", ":")).encode()  # minified: the densest form
        assert decode_cost(text) < COST_FACTOR / 1.5 * len(text), p
    line = json.dumps({"event": "step", "pid": 4242, "step": 17, "step_time_s": 0.1234567, "t": 1764371234.5},
                      sort_keys=True, separators=(",", ":")).encode()
    assert decode_cost(line) < COST_FACTOR / 1.5 * len(line)


def _run_json(folder: Path, junk: str, n: int, **extra) -> Path:
    folder.mkdir()
    doc = {**json.loads((REPORTS / "cpu_run" / "run.json").read_text()), "environment": {"x": "@@"}, **extra}
    (folder / "run.json").write_text(json.dumps(doc).replace('"@@"', "[" + ",".join([junk] * n) + "]"))
    return folder / "run.json"


@pytest.mark.parametrize("bad", [False, True])
def test_a_run_json_of_empty_objects_is_refused_before_decoding(tmp_path, bad):
    p = _run_json(tmp_path / "r", "{}", 1_000_000, **({"world_size": "x"} if bad else {}))  # 3 MB
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as e:
            load_run(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    msg = str(e.value)
    assert msg.startswith(f"{p}: ") and "\n" not in msg and f"more than {COST_FACTOR}x" in msg, msg
    assert peak < 3 << 20, peak  # refused within its first MiB (it cost 25x the file to refuse)


def test_a_refused_record_is_not_decoded_whole_to_name_its_schema(tmp_path):
    # 1 MB of floats (within the cost bound) and a bad field: the message names the field; the
    # schema is read as a slice of the text, not by decoding the whole file again untyped
    p = _run_json(tmp_path / "r", "1e5", 250_000, world_size="x")
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="world_size"):
            load_run(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * p.stat().st_size, peak  # an untyped decode of it alone takes 8x


def test_a_journal_of_empty_lines_is_refused_line_by_line(tmp_path):
    p = tmp_path / "journal.jsonl"
    p.write_bytes(b"{}\n" * 1_000_000)
    with pytest.raises(InputError) as e:
        jsonl.read_jsonl(p)
    assert str(e.value).startswith(f"{p}: ") and f"more than {COST_FACTOR}x" in str(e.value)


def test_a_journal_line_over_the_line_cap_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonl, "LINE_CAP", 1000)
    p = tmp_path / "journal.jsonl"
    p.write_bytes(b'{"event": "start", "t": 1}\n' + b'{"x": "' + b"a" * 5000 + b'"}\n')
    with pytest.raises(InputError, match="a line longer than"):
        jsonl.read_jsonl(p)


def test_torn_and_foreign_lines_are_still_skipped(tmp_path):
    p = tmp_path / "journal.jsonl"
    p.write_bytes(b'{"event": "start", "t": 1}\n{"event": "st\n[1, 2]\n\n{"event": "end", "t": 2}\n{"event": "ste')
    assert [e["event"] for e in jsonl.read_jsonl(p)] == ["start", "end"]


def test_a_record_over_the_cap_is_refused_before_it_is_read(tmp_path):
    p = tmp_path / "r.json"
    p.write_bytes(b'{"schema": "x"}' + b" " * 5000)
    with pytest.raises(InputError, match="more than 1000 bytes"):
        read_json_bytes(p, cap=1000)


def test_a_manifest_of_objects_owns_nothing_and_is_not_built(tmp_path):
    from trainprof import owned

    (tmp_path / owned.NAME).write_bytes(b'{"schema": "trainprof.manifest/1", "files": [' + b"{}," * 1_000_000 + b"{}]}")
    tracemalloc.start()
    try:
        assert owned.read(tmp_path) is None  # an invalid manifest owns nothing
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * (tmp_path / owned.NAME).stat().st_size, peak  # json.loads built it: 25x
    (tmp_path / owned.NAME).write_text('{"schema": "trainprof.manifest/1", "files": ["a.json"], "dirs": ["p"]}')
    assert owned.read(tmp_path) == ({"a.json"}, {"p"})  # control: a real one still reads
