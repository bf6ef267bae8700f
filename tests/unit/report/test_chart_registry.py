"""report/chart_registry.py: a chart registered once reaches the page, its slot and its files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

from trainprof.report import chart_registry, plots
from trainprof.report.chart_registry import Chart, image_names, roofline_spec
from trainprof.report.html import render_html
from trainprof.report.loader import load_folder

CPU_RUN = Path(__file__).resolve().parents[2] / "data" / "reports" / "cpu_run"


def _planted(monkeypatch, chart: Chart) -> None:
    monkeypatch.setattr(chart_registry, "CHARTS", chart_registry.CHARTS + (chart,))


def test_a_registered_chart_is_on_the_page_in_its_slot(monkeypatch):
    # a new chart: one entry, in a slot the page lays out generically (the run's steps)
    _planted(monkeypatch, Chart("planted", "page", lambda b: {"steps": b.run.summary.measured_steps}, "run"))
    b = load_folder(CPU_RUN)
    html = render_html(b)
    specs = json.loads(re.search(r'id="trainprof-charts">(.*?)</script>', html, re.DOTALL).group(1))
    assert specs["chart-planted"] == {"steps": b.run.summary.measured_steps}
    assert list(specs)[-1] == "chart-planted"  # built in the registry's order
    # laid out right after the step split's own chart, in the same slot
    assert re.search(r'id="chart-steps"></div>\s*<div class="chart vl" id="chart-planted"></div>', html)


def test_a_registered_export_is_drawn_for_each_rank(monkeypatch, tmp_path):
    _planted(monkeypatch, Chart("planted", "profile", lambda r, at: {"at": at, "rank": r.rank}, "critical",
                                export=("planted", ("svg",))))
    drawn = []
    monkeypatch.setattr(plots, "write_chart_files",
                        lambda spec, out, stem, exts: drawn.append((spec["at"], stem, exts)) or [])
    two = SimpleNamespace(ranks=[SimpleNamespace(rank=i, top_ops=[], roofline_points=[]) for i in (0, 3)])
    monkeypatch.setattr(plots, "as_struct", lambda result, _type: result)
    plots.write_analysis_plots(two, tmp_path)
    # the roofline has no point to draw here; the planted chart is drawn once per rank
    assert drawn == [("analysis.ranks[0]", "planted_rank0", ("svg",)), ("analysis.ranks[1]", "planted_rank3", ("svg",))]
    drawn.clear()  # only the ranks asked for (run --profile: those its terminal prints in full), named as before
    plots.write_analysis_plots(two, tmp_path, only=[1])
    assert drawn == [("analysis.ranks[1]", "planted_rank3", ("svg",))]


def test_the_exported_files_are_named_from_the_table():
    assert image_names() == {"roofline": ("roofline.png", "roofline_rank0.png"), "tune": ("tune.png",)}


def test_unpriced_top_rows_draw_no_roofline_on_the_page_or_in_a_file():
    # top rows shown (each saying why it has no price) over by-shape points: the page drew no
    # chart; the file used to draw the by-shape points under the title "top N ops"
    unpriced = SimpleNamespace(roofline=SimpleNamespace(intensity=None, flops=None), name="aten::foo", total_us=1.0)
    rank = SimpleNamespace(top_ops=[unpriced], roofline_points=[{"name": "aten::mm", "intensity": 10.0}])
    assert roofline_spec(rank, "analysis.ranks[0]") is None
