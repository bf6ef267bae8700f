"""Issue #45: what rich does to trace text on the terminal is bounded (report/console.py).

A device name of `<[` x 20,000 cost 14 s of CPU in `analyze`: rich's ReprHighlighter is
quadratic in a printed string, rich.markup.escape in a run of backslashes, markup parsing in
a run of backslashes before a `[`.
"""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.markup import escape as rich_escape

from trainprof.report.console import SHOW_CHARS, console, escape

SRC = Path(__file__).resolve().parents[3] / "src" / "trainprof"


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="\\[]/#@ab x", max_size=40))
def test_escape_is_richs_escape(text):
    assert escape(text) == rich_escape(text)


def test_a_long_text_is_cut_and_says_so():
    s = escape("a" * (SHOW_CHARS + 5))
    assert s.startswith("a" * SHOW_CHARS) and s.endswith("…(+5 characters)")


def _print_time(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        con = console(file=io.StringIO(), width=80)
        t = time.perf_counter()
        con.print(f"  device: {escape(text)}; 24 events")
        best = min(best, time.perf_counter() - t)
    return best


def test_printing_hostile_text_does_not_grow_faster_than_linearly():
    """time(4N)/time(N) for N = 16,000 characters: ~1 (cut and unhighlighted), ~4 if linear;
    rich's own escape and highlighter grew ~16x here."""
    for unit in ("<[", "\\", "\\\\[", "a.", "0x", "[a", "<a"):
        small, large = (unit * (16_000 // len(unit)), unit * (64_000 // len(unit)))
        ratio = min(_print_time(large) / _print_time(small) for _ in range(2))
        assert ratio < 8, f"{unit!r}: {ratio:.1f}"


def test_every_console_and_escape_comes_from_report_console():
    """No renderer builds a bare rich Console or uses rich's escape (the bounds live in one place)."""
    bad = []
    for path in SRC.rglob("*.py"):
        if path.name == "console.py" and path.parent.name == "report":
            continue
        text = path.read_text("utf-8")
        if "from rich.markup import escape" in text or re.search(r"(?<![\w.])Console\(", text):
            bad.append(str(path.relative_to(SRC)))
    assert bad == []
