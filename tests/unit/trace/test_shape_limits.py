"""Issue #33: memory bounded by the work. The attacks of the issue, made small (with the
limits lowered to match), are refused while streaming with one line naming the limit and
its variable, the same line on both reader paths; raising the variable lets a real file by.
Full-size figures (peak RSS before and after): benchmarks/attack_memory.py, docs/reliability.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.unit.trace.test_scanner import read_both
from trainprof.cli import main
from trainprof.errors import InputError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fuzz"))
import attacks  # noqa: E402

MB = 1 << 20


@pytest.mark.parametrize("attack, size, env, words", [
    ("backslashes", 4 * MB, {"TRAINPROF_MAX_STRING_BYTES": "2M"}, "a JSON string longer than 2 MiB"),
    ("backslashes_in_metadata", 4 * MB, {"TRAINPROF_MAX_STRING_BYTES": "2M"}, "a JSON string longer than 2 MiB"),
    ("long_name", 4 * MB, {"TRAINPROF_MAX_STRING_BYTES": "2M"}, "a JSON string longer than 2 MiB"),
    ("boundary_string", 8 * MB, {"TRAINPROF_MAX_STRING_BYTES": "2M"}, "a JSON string longer than 2 MiB"),
    ("brackets", 4 * MB, {}, "JSON nested more than 256 levels deep"),
    ("spaces", 4 * MB, {"TRAINPROF_MAX_SPACE_BYTES": "2M"}, "a run of whitespace longer than 2 MiB"),
    ("leading_spaces", 4 * MB, {"TRAINPROF_MAX_SPACE_BYTES": "2M"}, "a run of whitespace longer than 2 MiB"),
])
def test_attacks_are_refused_while_streaming(tmp_path, monkeypatch, attack, size, env, words):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    p = attacks.TRACE_ATTACKS[attack][0](tmp_path / f"{attack}.json.gz", size)
    with pytest.raises(InputError) as e:
        read_both(p, monkeypatch)  # the same line from both paths, or it fails there
    msg = str(e.value)
    assert msg.startswith(str(p)) and words in msg and "\n" not in msg, msg
    var = next(iter(env), "TRAINPROF_MAX_JSON_DEPTH")
    assert f"(raise {var} if this file is real)" in msg, msg


def test_an_event_of_many_small_members_is_bounded_by_the_event_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPROF_MAX_EVENT_BYTES", "2M")
    p = attacks._gzip(tmp_path / "wide.json.gz", b'{"traceEvents": [{"ph": "X", "args": {', b'"a": 1, ', 4 * MB,
                      b'"z": 0}}]}')
    with pytest.raises(InputError, match=r"one trace event \(or the text between two\) longer than 2 MiB.*"
                                         r"raise TRAINPROF_MAX_EVENT_BYTES"):
        read_both(p, monkeypatch)


def test_raising_the_limit_lets_a_real_file_by(tmp_path, monkeypatch):
    p = attacks.long_name(tmp_path / "long.json.gz", 3 * MB)  # one event, a 3 MiB name
    monkeypatch.setenv("TRAINPROF_MAX_STRING_BYTES", "2M")
    with pytest.raises(InputError, match="TRAINPROF_MAX_STRING_BYTES"):
        read_both(p, monkeypatch)
    monkeypatch.setenv("TRAINPROF_MAX_STRING_BYTES", "4M")
    with pytest.raises(InputError, match="TRAINPROF_MAX_NAME_CHARS"):  # a name: its own cap (#45)
        read_both(p, monkeypatch)
    monkeypatch.setenv("TRAINPROF_MAX_NAME_CHARS", "4M")
    fast, pure, _ = read_both(p, monkeypatch)
    assert len(fast) == len(pure) == 1 and len(fast.names[fast.name_id[0]]) == 3 * MB


def test_the_record_loader_checks_as_it_reads(tmp_path, capsys, monkeypatch):
    """`report DIR` on an analysis.json holding a long string of backslashes (32 MB: 2.06 GB
    before its depth error) or nested 300 deep: one line, exit 2."""
    monkeypatch.setenv("TRAINPROF_MAX_STRING_BYTES", "1M")
    folder = attacks.deep_record(tmp_path / "long", 3 * MB)
    assert main(["report", str(folder), "--format", "md"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "analysis.json: a JSON string longer than 1 MiB" in err, err
    folder = attacks.deep_record(tmp_path / "deep", 10, depth=300)
    assert main(["report", str(folder), "--format", "md"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "JSON nested more than 256 levels deep" in err, err


def test_a_bad_limit_variable_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRAINPROF_MAX_STRING_BYTES", "lots")
    p = attacks.long_name(tmp_path / "t.json.gz", 2 * MB)
    assert main(["analyze", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "TRAINPROF_MAX_STRING_BYTES='lots': expected a positive count" in err, err
