"""report/view_profile.py and view_steps.py: the Profile section and the step split, read
back against planted records, and the spacing the `table` macro gives them."""

from __future__ import annotations

from pathlib import Path

import msgspec

from trainprof.recordtypes.analysis import OpRoofline
from trainprof.recordtypes.base import load
from trainprof.recordtypes.run import RunRecord
from trainprof.report.loader import load_folder
from trainprof.report.templating import macro
from trainprof.report.view_profile import profile_view
from trainprof.report.view_steps import step_split_table
from trainprof.report.view_table import Cell, Row, head, table

DATA = Path(__file__).resolve().parents[2] / "data" / "reports"


def _planted():
    a = load_folder(DATA / "gpu_trace").analysis
    r = a.ranks[0]
    priced = OpRoofline(calls=2020, calls_priced=2020, flops=2.0e12, bytes=1.0e9, intensity=2000.0,
                        achieved_tflops=5.6, attainable_tflops=15.7, roofline_pct=35.67, bound="compute",
                        dtype="fp32", note="x <y>")
    ops = [msgspec.structs.replace(r.top_ops[0], roofline=priced), *r.top_ops[1:]]  # the others: no block
    r = msgspec.structs.replace(r, top_ops=ops, notes=["one", "two"])
    return msgspec.structs.replace(a, ranks=[r, *a.ranks[1:]])


def test_roofline_rows_a_priced_one_and_one_without_a_block():
    a = _planted()
    v = profile_view(a, "Profile", "analysis", None)
    t = v.roofline.table
    assert len(t.rows) == min(5, len(a.ranks[0].top_ops))  # the top-5 table's operators
    first = [c.text for c in t.rows[0].cells]
    assert first[:2] == [1, v.ops.rows[0].cells[1].text] and t.rows[0].cells[1].title == "record_param_comms"
    assert first[2:8] == ["357.3 ms", "2e+12", "1e+09", "2e+03", "5.6", "15.7"]  # total_us 357,343
    assert first[8] == "36%" and str(first[9]) == 'compute<br><span class="note">x &lt;y&gt;</span>'
    dashes = t.rows[1]
    assert [c.text for c in dashes.cells[3:]] == ["—"] * 7 and dashes.end is False and t.rows[0].end is None
    assert v.roofline.bounds.startswith("Of the top five, 1 are compute-bound, 0 memory-bound")
    assert v.notes == "one; two" and v.title == "Profile" and not v.cpu_only
    assert [r.cells[2].text for r in v.ops.rows[:1]] == ["2,020"]  # calls


def test_the_page_spaces_the_rows_as_its_source_did():
    html = macro("report.html.j2", "profile_section")(profile_view(_planted(), "Profile", "analysis", None), "p")
    assert '<td>—</td></tr><tr><td class="n">3</td>' in html  # a row without a block does not end its line
    assert 'x &lt;y&gt;' in html and "<y>" not in html
    t = table(head("a", "#b"), [(Cell(1, "n"), Cell("z", title="full z"))], row_lines=True, head_line=True,
              tbody_inline=True)
    assert macro("report.html.j2", "table")(t) == ('<table><thead><tr><th>a</th><th class="n">b</th></tr></thead>\n'
                                                   '<tbody><tr><td class="n">1</td><td title="full z">z</td></tr>\n'
                                                   '</tbody></table>')
    t = table(head("a"), [Row((Cell(1),), end=True), Row((Cell(2),), end=False)], spread=True, tbody_inline=True)
    assert macro("report.html.j2", "table")(t) == ('<table>\n<thead><tr><th>a</th></tr></thead>\n<tbody>'
                                                   '<tr><td>1</td></tr>\n<tr><td>2</td></tr></tbody>\n</table>')


def test_step_split_the_median_row_only_where_a_phase_is_outlier_driven():
    run = load(DATA / "cpu_run" / "run.json", RunRecord)
    split = {"data_s": {"mean_s": 0.01, "median_s": 0.005, "mean_share_pct": 10.0, "median_share_pct": 5.5,
                        "outlier_driven": True},
             "forward_s": {"mean_s": 0.2, "median_s": 0.2, "mean_share_pct": 80.0, "median_share_pct": 80.0,
                           "outlier_driven": False}}
    s = msgspec.structs.replace(run.summary, phase_split=split)
    t = step_split_table(s)
    assert [c.text for c in t.head] == ["phase", "data", "h2d", "forward", "backward", "optimizer", "other", "step"]
    assert [c.text for c in t.rows[0].cells[1:4]] == ["10.0 ms", "—", "200.0 ms"]
    assert [c.text for c in t.rows[1].cells[1:4]] == ["10.0%", "—", "80.0%"] and t.rows[1].cells[-1].text == "100%"
    assert [c.text for c in t.rows[2].cells[1:4]] == ["5.0 ms (5.5%)", "", ""] and t.rows[2].end is False
    split["data_s"]["outlier_driven"] = False
    assert len(step_split_table(s).rows) == 2


def test_report_md_rank_text_says_where_htas_idle_differs_only_with_a_device_timeline():
    from trainprof.report.view_rank_md import rank_text

    r = load_folder(DATA / "gpu_trace").analysis.ranks[0]
    tb = msgspec.structs.replace(r.temporal_breakdown, idle_us=1000.0, hta_idle_us=2500.0, hta_idle_pct=42.0)
    t = rank_text(msgspec.structs.replace(r, temporal_breakdown=tb), "analysis.ranks[0]")
    # planted: HTA's 2,500 µs beside our 1,000 µs
    assert t.hta_note.startswith("HTA would report idle 42.0% (2.5 ms) over this window")
    assert t.steps == "5 profiler steps" and t.roof_rows == [] and t.roof_bounds is None
    assert rank_text(msgspec.structs.replace(r, temporal_breakdown=tb, has_gpu=False), "a").hta_note == ""
