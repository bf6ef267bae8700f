"""Terminal tables never cut a number: every renderer, at 80 and 120 columns.

Each check renders into a recording Console of a fixed width, keeps the tables the renderer
printed, and asserts that every number token of their cells and headers appears whole in
the output as often as in the cells (a cut `1,868…` or a number folded over two lines
would be missing), and that no line is wider than the console.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import msgspec
import pytest
from rich.console import Console
from rich.table import Table

from trainprof.recordtypes.run import run_from_dict
from trainprof.report.fit import FitTable, PUNCT, _plain, all_numbers, fit_parts, is_number

DATA = Path(__file__).resolve().parents[2] / "data" / "reports"
WIDTHS = (80, 120)


class Capture(Console):
    """A recording console that also keeps the tables printed on it."""

    def __init__(self, width: int) -> None:
        super().__init__(width=width, record=True, color_system=None, force_terminal=False)
        self.tables: list[Table] = []

    def print(self, *objects, **kw):  # noqa: ANN002, ANN003, ANN201
        self.tables += [o for o in objects if isinstance(o, Table)]
        super().print(*objects, **kw)


def _tokens(text: str) -> Counter:
    return Counter(t.strip(PUNCT) for t in re.split(r"[\s│┃]+", text) if is_number(t))


def check(con: Capture) -> None:
    out = con.export_text(clear=False)
    # names may be shortened on purpose (report/names.py: `…row_1<c10…`), numbers never (`1,86…`)
    assert not re.search(r"(?<![\w:<…])\d[\d,.]*…", out)
    for line in out.splitlines():  # no table cropped at the console's edge: each keeps its right border
        assert len(line) <= con.width
        if line and line[0] in "┏┃┡│└┌├╇":
            assert line.rstrip()[-1] in "┓┃┩│┘┐┤", f"cropped at width {con.width}: {line!r}"
    assert con.tables, "the renderer printed no table"
    seen = _tokens(out)
    for t in con.tables:
        assert isinstance(t, FitTable), f"{t.title!r} is a plain rich Table: it may cut numbers"
        cells = [_plain(con, c) for col in t.columns for c in [col.header, *col._cells]]
        want = Counter(all_numbers(cells))
        missing = {n: k for n, k in want.items() if seen[n] < k}
        assert not missing, f"{t.title!r}: numbers cut or missing at width {con.width}: {missing}"


def _run(scale: float = 1.0):
    rec = run_from_dict(json.loads((DATA / "cpu_run" / "run.json").read_text()))
    if scale != 1.0:
        steps = [msgspec.structs.replace(s, step_time_s=s.step_time_s * scale, forward_s=s.forward_s * scale,
                                     backward_s=s.backward_s * scale, optimizer_s=s.optimizer_s * scale)
                 for s in rec.steps]
        rec = msgspec.structs.replace(rec, steps=steps)
    return rec


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("scale", [1.0, 8.0, 80.0])
def test_run_tables(width, scale):
    from trainprof.report.terminal import print_run

    rec = _run(scale)
    con = Capture(width)
    print_run(rec, con)
    check(con)
    out = con.export_text(clear=False)
    # the step table's figures, formatted from the record itself, each appear whole
    unit = "s" if "times in s" in out else "ms"
    k, d = (1.0, 3) if unit == "s" else (1e3, 1)
    for s in rec.steps:
        for v in (s.step_time_s, s.forward_s, s.backward_s, s.optimizer_s):
            assert f"{v * k:,.{d}f}" in out


def test_the_issue_case_ms_above_a_thousand_fits_80_columns():
    """The issue's step table: times of 1,000+ ms at 80 columns were cut (`1,868…`). With
    the median step ≥ 1 s, times print in seconds (`1.868`), and the table fits whole."""
    from trainprof.report.terminal import steps_table

    rec = _run(8.0)  # measured steps of 0.46 s and 1.04 s → ×8: median ≥ 1 s
    t = steps_table(rec.steps, 2)
    assert "times in s" in t.title
    con = Capture(80)
    con.print(t)
    check(con)


def test_a_table_too_wide_wraps_onto_a_second_table_repeating_the_key():
    t = FitTable(title="wide")
    for name in ("step", *(f"c{i}" for i in range(12))):
        t.add_column(name, justify="right")
    t.add_row("7", *(f"{1_234_567.891 * (i + 1):,.3f}" for i in range(12)))
    con = Capture(80)
    parts = fit_parts(t, con, 80)
    # each cell is 13-14 characters + 3 of padding and border: 12 columns cannot share 80
    assert len(parts) >= 2
    assert all(p.columns[0].header == "step" for p in parts)
    con.print(t)
    check(con)
    assert con.export_text(clear=False).count(" 7 ") == len(parts)  # the key repeated on every part


def test_a_table_that_fits_is_rendered_unchanged():
    t = FitTable()
    t.add_column("a")
    t.add_row("1.5")
    assert fit_parts(t, Console(width=80), 80) == [t]


@pytest.mark.parametrize("width", WIDTHS)
def test_analysis_tables(width):
    from trainprof.report.analysis_terminal import print_analysis, roofline_table

    for kind in ("gpu_trace", "multi_rank", "cpu_run"):
        a = json.loads((DATA / kind / "analysis.json").read_text())
        con = Capture(width)
        print_analysis(a, con)
        if a["ranks"][0]["roofline_points"]:
            con.print(roofline_table(a["ranks"][0], k=5))
        check(con)


@pytest.mark.parametrize("width", WIDTHS)
def test_tune_memory_bench_diff_tables(width):
    from trainprof.analysis.job.diff import diff_ranks
    from trainprof.bench.tables import print_bench
    from trainprof.recordtypes.base import load
    from trainprof.recordtypes.bench import Bench
    from trainprof.recordtypes.memory import Memory
    from trainprof.recordtypes.tune import Tune
    from trainprof.report.diff_terminal import print_diff
    from trainprof.report.memory_terminal import print_memory
    from trainprof.report.tune_terminal import print_ladder

    for render, doc in ((print_ladder, load(DATA / "tune" / "tune.json", Tune)),
                        (print_memory, load(DATA / "memory" / "memory.json", Memory)),
                        (print_bench, load(DATA / "bench" / "bench.json", Bench))):
        con = Capture(width)
        render(doc, con)
        check(con)
    a = json.loads((DATA / "gpu_trace" / "analysis.json").read_text())["ranks"][0]
    con = Capture(width)
    print_diff(diff_ranks(a, a), con)
    check(con)


def test_every_table_the_package_prints_is_a_fit_table():
    """A plain rich Table anywhere in the package would cut numbers again (issue #20)."""
    import ast

    pkg = Path(__file__).resolve().parents[3] / "src" / "trainprof"
    offenders = []
    for f in pkg.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "rich.table":
                bad = [a.name for a in node.names if a.name == "Table"]
                # importing the name for annotations is fine; constructing it is not
                if bad and f.name != "fit.py" and "Table(" in f.read_text("utf-8").replace("FitTable(", ""):
                    offenders.append(str(f.relative_to(pkg)))
    assert not offenders, f"construct FitTable, not rich Table: {offenders}"
