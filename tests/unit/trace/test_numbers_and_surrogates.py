"""Issue #33: numbers trainprof cannot hold and lone surrogate escapes, on both reader paths.

A pid of "99999999999999999999" raised OverflowError and `"Input Dims": [[1e999, 2]]` a
msgspec.ValidationError, on both paths; a lone `\\udc00` in a trace over 256 KB was read by
the C scanner and refused by the pure path. Now: the event with such a number is skipped and
counted (the others are kept), a lone surrogate is replaced by U+FFFD and counted, and the
two paths give the same Trace, bit for bit (test_scanner.read_both).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.unit.trace.test_scanner import assert_same, read_both
from trainprof.trace.numbers import OUT_OF_RANGE

PAD = 3000  # 3000 events of ~200 bytes: ~600 KB, past the first 256 KB batch, so batches are cut


def _trace(tmp_path: Path, planted: str, big: bool) -> Path:
    """Kernel events, the planted event (JSON text) second; `big`: padded past one batch."""
    ev = '{"ph": "X", "cat": "kernel", "name": "k%d", "pid": 0, "tid": 7, "ts": %d, "dur": 1, "args": {"x": "%s"}}'
    n = PAD if big else 3
    events = [ev % (i, i, "p" * 120) for i in range(n)]
    events.insert(1, planted)
    p = tmp_path / "t.json"
    p.write_text('{"traceEvents": [' + ",\n".join(events) + "]}")
    return p


@pytest.mark.parametrize("big", [False, True], ids=["small", "batched"])
@pytest.mark.parametrize("planted", [
    '{"ph": "X", "cat": "kernel", "name": "bad", "pid": "99999999999999999999", "tid": 7, "ts": 5, "dur": 1}',
    '{"ph": "X", "cat": "kernel", "name": "bad", "pid": 99999999999999999999, "tid": 7, "ts": 5, "dur": 1}',
    '{"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 0, "tid": "-' + "9" * 5000 + '", "ts": 5, "dur": 1}',
    '{"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 0, "tid": 1, "ts": 5, "dur": 1, '
    '"args": {"Input Dims": [[1e999, 2]], "Input type": ["float"]}}',
    '{"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 0, "tid": 1, "ts": 5, "dur": 1, '
    '"args": {"Input Dims": [[99999999999999999999]]}}',
    '{"ph": "f", "cat": "ac2g", "name": "bad", "id": 3, "pid": "99999999999999999999", "tid": 1, "ts": 5}',
], ids=["pid str", "pid int", "tid 5000 digits", "dims 1e999", "dims int", "flow pid"])
def test_an_event_with_a_number_out_of_range_is_skipped_and_counted(tmp_path, monkeypatch, planted, big):
    fast, pure, _ = read_both(_trace(tmp_path, planted, big), monkeypatch)
    assert_same(fast, pure)
    n = PAD if big else 3
    assert fast.skip_reasons == {OUT_OF_RANGE: 1}  # the planted event, and only it
    assert len(fast) == n and "bad" not in [fast.names[i] for i in fast.name_id]  # every other event kept
    assert any("skipped 1 malformed events: 1 event with a number out of range" in note for note in fast.notes)


@pytest.mark.parametrize("big", [False, True], ids=["small", "batched"])
@pytest.mark.parametrize("planted, name", [
    (r'{"ph": "X", "cat": "kernel", "name": "ok", "pid": 0, "tid": 7, "ts": 5, "dur": 1, "args": {"skip": "\udc00"}}',
     "ok"),  # in a value no reader keeps: the C scanner used to accept it, msgspec refused the file
    (r'{"ph": "X", "cat": "kernel", "name": "a\ud800b", "pid": 0, "tid": 7, "ts": 5, "dur": 1}', "a\ufffdb"),
    (r'{"ph": "X", "cat": "kernel", "name": "\ud83d\ude00\udc00", "pid": 0, "tid": 7, "ts": 5, "dur": 1}',
     "\U0001f600\ufffd"),  # a valid pair stays, the lone low after it goes
], ids=["skipped arg", "lone high in name", "pair then lone low"])
def test_lone_surrogates_are_replaced_the_same_on_both_paths(tmp_path, monkeypatch, planted, name, big):
    fast, pure, scanned = read_both(_trace(tmp_path, planted, big), monkeypatch)
    assert_same(fast, pure)
    assert scanned  # the C scanner read the repaired batches itself
    assert name in fast.names and len(fast) == (PAD if big else 3) + 1
    assert "replaced 1 lone UTF-16 surrogate escapes (such as \\udc00) with U+FFFD" in fast.notes


def test_an_escaped_backslash_before_u_is_text_not_an_escape(tmp_path, monkeypatch):
    planted = r'{"ph": "X", "cat": "kernel", "name": "C:\\udc00", "pid": 0, "tid": 7, "ts": 5, "dur": 1}'
    fast, pure, _ = read_both(_trace(tmp_path, planted, True), monkeypatch)
    assert_same(fast, pure)
    assert "C:\\udc00" in fast.names and not any("surrogate" in n for n in fast.notes)


def test_the_cli_reports_the_skip_and_exits_0(tmp_path, capsys):
    from trainprof.cli import main

    planted = '{"ph": "X", "cat": "kernel", "name": "bad", "pid": "99999999999999999999", "tid": 7, "ts": 5, "dur": 1}'
    assert main(["analyze", str(_trace(tmp_path, planted, True)), "--json", "--peak-tflops", "100",
                 "--peak-bandwidth-gbs", "1000"]) == 0
    rank = json.loads(capsys.readouterr().out)["ranks"][0]
    assert rank["skipped_events"] == 1


@pytest.mark.parametrize("big", [False, True], ids=["small", "batched"])
@pytest.mark.parametrize("arg, value", [("registers per thread", 3_000_000_000), ("registers per thread", -2 ** 31 - 1),
                                        ("grid", [2 ** 40, 1, 1]), ("block", [1, 2 ** 31, 1])])
def test_a_kernel_arg_beyond_its_int32_column_is_absent_on_both_paths(tmp_path, monkeypatch, big, arg, value):
    """#45: "registers per thread" above int32 was an OverflowError traceback on the pure path,
    and wrapped to a negative count in the C scanner's. Now absent (-1), as an optional arg
    that does not fit always was; the event stays."""
    planted = json.dumps({"ph": "X", "cat": "kernel", "name": "big", "pid": 0, "tid": 7, "ts": 5, "dur": 1,
                          "args": {arg: value, "registers per thread": 32} if arg != "registers per thread"
                          else {arg: value, "grid": [1, 1, 1]}})
    fast, pure, _ = read_both(_trace(tmp_path, planted, big), monkeypatch)
    assert_same(fast, pure)
    row = next(i for i in range(len(fast)) if fast.names[fast.name_id[i]] == "big")
    g = fast.gpu
    at = int(np.flatnonzero(g.row == row)[0])
    if arg == "registers per thread":
        assert g.registers_per_thread[at] == -1
    else:
        column = g.grid if arg == "grid" else g.block
        assert list(column[at]) == [-1, -1, -1]
