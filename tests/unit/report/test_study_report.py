"""The study's report parts read one field each: the roofline section is the top-5 table's
operators with its times; "kept" means in the final configuration in every table and text;
the before/after section compares what the traces hold (CPU ops on a CPU run)."""

from __future__ import annotations

import html as htmllib
import json
import re
import shutil

import pytest
from report_fixtures import DATA

from trainprof.cli import main
from trainprof.report.html import render_html
from trainprof.report.loader import load_folder
from trainprof.report.markdown import render_markdown

from tests.plain import plain

QWEN = (DATA.parents[1] / "data" / "traces" / "real" / "tracelens_h100_hf_inference"
        / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")


def _rows(md: str, heading: str) -> list[list[str]]:
    """The cells of the first Markdown table after `heading`."""
    part = md[md.index(heading):]
    lines = part.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("| "))
    out = []
    for x in lines[start + 2:]:
        if not x.startswith("|"):
            break
        out.append([c.strip() for c in x.strip("|").split(" | ")])
    return out


def test_the_roofline_section_is_the_top5_table_with_its_times(tmp_path, capsys):
    out = tmp_path / "a"
    assert main(["analyze", str(QWEN), "--out", str(out)]) == 0
    capsys.readouterr()
    md = (out / "report.md").read_text()
    top = _rows(md, "**Top-5 operators**")
    roof = _rows(md, "**Roofline of the top-5 operators**")
    assert [r[1] for r in roof] == [r[1] for r in top] and len(roof) == 5  # the same operators, in order
    assert [r[2] for r in roof] == [r[3] for r in top]  # the same times (the table's "total")
    a = json.loads((out / "analysis.json").read_text())["ranks"][0]
    for cells, o in zip(roof, a["top_ops"]):
        rf = o["roofline"]  # FLOPs, bytes, intensity, achieved and attainable TFLOP/s, bound: one field each
        assert cells[3] == (f"{rf['flops']:.3g}" if rf["flops"] is not None else "—")
        assert cells[4] == (f"{rf['bytes']:.3g}" if rf["bytes"] is not None else "—")
        assert cells[9] == (rf["bound"] or "—")
    bounds = [c[9] for c in roof]
    assert (f"Of the top five, {bounds.count('compute')} are compute-bound, {bounds.count('memory')} memory-bound "
            f"and {bounds.count('latency')} latency-bound") in md
    html = (out / "report.html").read_text()
    section = html[html.index("<h3>Roofline of the top 5 operators</h3>"):]
    # the full name is the cell's title (the cell shows report/names.py's short name)
    names = re.findall(r'<td class="n">\d</td><td class="name" title="([^"]+)">[^<]+</td><td class="n">([^<]+)</td>',
                       section[:section.index("</table>")])
    names = [(htmllib.unescape(n), t) for n, t in names]
    from trainprof.report.formatting import duration

    # the same operators, and the time of each its row in the top-ops table (html's units)
    assert names == [(o["name"], duration(o["total_us"], "us")) for o in a["top_ops"][:5]]


def _tune_folder(tmp_path, confirmed: bool):
    d = tmp_path / ("ok" if confirmed else "no")
    d.mkdir()
    for k in ("cpu_run", "tune"):
        for f in (DATA / k).iterdir():
            shutil.copy(f, d / f.name)
    if not confirmed:  # gc_disable passed its trial, the pairs did not confirm it: not kept
        doc = json.loads((d / "tune.json").read_text())
        doc["best"].update(knobs=[], speedup=1.0, unconfirmed={
            "knobs": ["gc_disable"], "reason": "the knobs that passed their trials measured 1.01× the baseline "
                                               "in 1 alternating pairs (needs ≥ 1.03×)"})
        (d / "tune.json").write_text(json.dumps(doc))
    return d


@pytest.mark.parametrize("confirmed", [True, False])
def test_kept_has_one_meaning_in_every_table_and_text(tmp_path, confirmed):
    from rich.console import Console

    from trainprof.report.tune_terminal import print_ladder

    b = load_folder(_tune_folder(tmp_path, confirmed))
    md = render_markdown(b)
    row = next(r for r in _rows(md, "## 3.") if r[0] == "gc_disable")
    assert (row[7], row[8]) == ("passed", "**kept**" if confirmed else "no")  # trial, kept
    speed = md[md.index("## 5."):md.index("## 6.")]
    assert ("gc_disable passed their trials but are not kept" in speed) is not confirmed
    html = render_html(b)
    tr = re.search(r"<tr class=\"(kept)?\"><td>gc_disable</td>.*?</tr>", html, re.S).group(0)
    assert ('<span class="yes">yes</span>' in tr) is confirmed and ("passed" in tr)
    con = Console(width=100, record=True)
    print_ladder(b.tune, con)
    line = next(x for x in con.export_text().splitlines() if x.startswith("gc_disable"))
    assert line.split()[-1] == ("yes" if confirmed else "no")


def _cpu_trace(path, mm_us: float, mul_us: float) -> None:
    """One profiler step on a CPU: aten::mm (self mm_us) and aten::mul_ (self mul_us)."""
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 0,
           "dur": mm_us + mul_us + 20},
          {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": mm_us},
          {"ph": "X", "cat": "cpu_op", "name": "aten::mul_", "pid": 1, "tid": 1, "ts": 10 + mm_us, "dur": mul_us}]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))


def test_a_cpu_before_after_shows_cpu_ops_and_host_step_times(tmp_path):
    from trainprof.analysis.job.diff import diff_ranks
    from trainprof.jobs.analyze import analyze_one
    from trainprof.report.diff_terminal import diff_markdown

    # base: mm 1,000 µs + mul_ 5 µs in a 1,025 µs step; new: mm 500 µs + mul_ 380 µs (+7500%)
    _cpu_trace(tmp_path / "b.json", 1000.0, 5.0)
    _cpu_trace(tmp_path / "n.json", 500.0, 380.0)
    d = diff_ranks(analyze_one(str(tmp_path / "b.json"), 10), analyze_one(str(tmp_path / "n.json"), 10))
    st = d.step_time_us
    # the profiler step's host time: 1,025 → 900 µs
    assert (st.base, st.new, st.source) == (1025.0, 900.0, "mean host time of the profiler steps")
    rows = {r.name: r for r in d.ops.top}
    assert d.ops.metric == "self_cpu" and rows["aten::mm"].change_pct == pytest.approx(-50.0)
    # mul_'s base, 5 µs, is under 10 µs (and under 1% of 1,025 µs): no percentage, still ranked by µs
    assert rows["aten::mul_"].change_pct is None and rows["aten::mul_"].small_base
    md = diff_markdown(d)
    assert "GPU time per step" not in md and "## Operators by self CPU time per step (a CPU trace)" in md
    assert "| `aten::mul_` | 5.0 µs | 380.0 µs | +375.0 µs | base < 1% of step |" in md
    assert "**Step time 1.0 ms → 900.0 µs: 1.14× (-12.2%)** (mean host time of the profiler steps)." in md
    # a study whose knob changed the tokens per step: the step times, never their ratio
    from trainprof.jobs.study import UNLIKE

    unlike = diff_markdown(d, UNLIKE)
    assert f"**Step time 1.0 ms → 900.0 µs** ({UNLIKE})." in unlike and "1.14×" not in unlike
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "diff.json").write_text(json.dumps(json.loads(__import__("msgspec").json.encode(d))))
    html = render_html(load_folder(tmp_path / "f"))
    section = html[html.index('<section id="diff">'):]
    section = section[:section.index("</section>")]
    assert "Step time 1.0 ms → 900.0 µs" in section and "—" not in section.split("</p>")[0]
    assert "Operators by self CPU time per step" in section and "base &lt; 1% of step" in section
    assert "7500" not in section and "Kernels" not in section


def test_the_terminal_roofline_is_the_same_top5_rows(tmp_path):
    """`analyze` and `run --profile` print the roofline of the top-operators table's first five
    rows, with that table's times, like report.md and report.html; an older record (no
    `top_ops[].roofline`) still prints its by-shape points, and says so."""
    from rich.console import Console

    from trainprof.jobs.analyze import analyze_one
    from trainprof.report import figures
    from trainprof.report.analysis_terminal import print_analysis

    rank = plain(analyze_one(str(QWEN), 10))  # as analysis.json holds it: an older record is made from it below
    a = {"schema": "trainprof.analysis/1", "ranks": [rank]}
    con = Console(width=200, record=True, color_system=None)
    with figures.capture() as shown:
        print_analysis(a, con)
    text = con.export_text()
    roof = text[text.index("Roofline of the top-5 operators"):]
    roof = roof[:roof.index("Of the top five")]
    fields = [s.field for s in shown if ".top_ops[" in s.field and ".roofline." in s.field]
    # every roofline figure is one of the first five rows' blocks; none is a by-shape point
    assert fields and {f.split(".roofline.")[0] for f in fields} <= {f"analysis.ranks[0].top_ops[{i}]" for i in range(5)}
    assert not [s for s in shown if "roofline_points" in s.field]
    for o in rank["top_ops"][:5]:  # the row's time, as the top-operators table prints it
        assert figures.show(o["total_us"], "us", "x") in roof
    # an older record: the by-shape table, named as such
    old = {"schema": "trainprof.analysis/1",
           "ranks": [{**rank, "top_ops": [{k: v for k, v in o.items() if k != "roofline"} for o in rank["top_ops"]]}]}
    con = Console(width=200, record=True, color_system=None)
    print_analysis(old, con)
    assert "Roofline of the top operators by shape, an older record" in con.export_text()
