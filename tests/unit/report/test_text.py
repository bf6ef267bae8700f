"""report/text.py: control characters from traces are shown, never sent to a terminal."""

import pytest

from trainprof.report.text import visible, visible_tree


def test_visible_escapes_each_kind_of_control():
    assert visible("a\x1b]0;title\x07b") == "a\\x1b]0;title\\x07b"
    assert visible("x\ny\tz") == "x\\x0ay\\x09z"
    assert visible("del\x7f c1\x9b") == "del\\x7f c1\\x9b"
    assert visible("rtl\u202eevil") == "rtl\\u202eevil"
    assert visible("é → ≥ 中") == "é → ≥ 中"  # printable non-ASCII stays


@pytest.mark.parametrize("bad", ["\x1b", "\x00", "\n", "\x7f", "\x9b", "\u2028", "\u202e", "\u2066"])
def test_visible_tree_finds_a_control_anywhere(bad):
    rec = {"ranks": [{"top_ops": [{"name": f"op{bad}x", "us": 1.0}]}], f"k{bad}": (1, "ok")}
    out = visible_tree(rec)
    esc = visible(bad)
    assert esc != bad
    assert out["ranks"][0]["top_ops"][0]["name"] == f"op{esc}x"
    assert out[f"k{esc}"] == (1, "ok")  # keys too; tuples stay tuples


def test_visible_tree_returns_a_clean_record_as_it_is():
    rec = {"ranks": [{"name": "aten::mm → gemm ≥ 2×", "n": 3, "x": None, "path": "C:/new"}], 7: [1.5]}
    assert visible_tree(rec) is rec  # no control character: nothing copied
    # a literal backslash before "n" looks like an escaped newline to the quick scan: the
    # string-by-string path runs and finds nothing to change
    win = {"path": "C:\\new"}
    assert visible_tree(win) == win
    # a record msgspec cannot encode still goes through the string-by-string path
    odd = {"s": {1, 2}, "name": "a\x1bb"}
    assert visible_tree(odd)["name"] == "a\\x1bb"
