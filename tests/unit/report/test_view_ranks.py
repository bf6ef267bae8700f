"""report/view_ranks.py: the Ranks section's tables, read back against the record."""

from __future__ import annotations

from pathlib import Path

from trainprof.report.loader import load_folder
from trainprof.report.view_ranks import ranks_view

MULTI = Path(__file__).resolve().parents[2] / "data" / "reports" / "multi_rank"


def test_per_rank_rows_name_the_straggler_and_fill_every_column():
    b = load_folder(MULTI)
    m = b.analysis.multi_rank
    v = ranks_view(m, b.run)
    t = v.per_rank
    assert [r.cells[0].text for r in t.rows] == [p.rank for p in m.per_rank]  # one row per rank, in order
    assert all(len(r.cells) == len(t.head) for r in t.rows)
    # the record's straggler (rank 1, +12.1% compute) carries the badge; the other rank none
    badges = {r.cells[0].text: str(r.cells[-1].text) for r in t.rows}
    assert badges == {0: "", 1: '<span class="bad">straggler (+12.1% compute)</span>'}
    assert t.rows[0].cells[1].text == "611.4 ms" and t.rows[0].cells[1].cls == "n"  # step_time_us 611,423.5 µs
    for table in (v.groups, v.waits, v.axes, *v.stages):
        assert table is None or all(len(r.cells) == len(table.head) for r in table.rows)
