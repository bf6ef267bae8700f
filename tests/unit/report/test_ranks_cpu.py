"""A CPU job (gloo, traces without GPU activity): its per-rank table compared compute,
communication, idle and waiting from a device timeline the traces do not have, and showed
0.0 µs for every rank (issue #37 item 5.3). Now each rank's step is its host ProfilerStep
range and the device-timeline columns are None and not shown, with a note saying why."""

from __future__ import annotations

import io
import json
import re
import statistics

import msgspec
import torch
from report_fixtures import folder
from rich.console import Console

from trainprof.analysis.job.multirank import multi_rank
from trainprof.analysis.trace_report import rank_summary
from trainprof.collect.profiler import ProfileConfig, StepProfiler
from trainprof.jobs.analyze import analyze_paths
from trainprof.report.analysis_terminal import _multi_rank
from trainprof.report.figures import LABELS
from trainprof.report.html import render_html
from trainprof.report.loader import load_folder


def _cpu_rank(tmp_path):  # noqa: ANN001, ANN202
    """A real CPU-only trace of two profiled steps, analysed: a rank with has_gpu False."""
    path = tmp_path / "trace.json.gz"
    p = StepProfiler(ProfileConfig(active=2, record_shapes=False), "cpu", path, first_step=0)
    x = torch.ones(64, 64)
    with p.running():
        for _ in range(ProfileConfig(active=2).total_steps):
            (x @ x).sum().item()
            p.step()
    return analyze_paths([str(path)], jobs=1).ranks[0]


def test_a_cpu_rank_has_a_host_step_and_no_device_figures(tmp_path):
    rank = _cpu_rank(tmp_path)
    assert rank.has_gpu is False and rank.steps == 2 and rank.step_time_us is None
    row = rank_summary(rank)
    # the host step: the median of the two ProfilerStep ranges, as per_step records them
    assert row["has_gpu"] is False and row["host_step_us"] == statistics.median(r.cpu_us for r in rank.per_step)

    a, b = row, {**row, "rank": 1, "host_step_us": 2 * row["host_step_us"]}
    mr = multi_rank([a, b])
    assert mr.device_timeline is False and mr.stragglers == []
    # the device-timeline figures are not measured: None, where they read 0.0
    assert [r.compute_us for r in mr.per_rank] == [None, None] and [r.wait_us for r in mr.per_rank] == [None, None]
    assert [r.step_time_us for r in mr.per_rank] == [a["host_step_us"], b["host_step_us"]]
    assert mr.step_time_us.max == b["host_step_us"]
    doc = json.loads(msgspec.json.encode(mr))
    assert doc["device_timeline"] is False and doc["per_rank"][0]["idle_us"] is None

    buf = io.StringIO()
    _multi_rank(mr, Console(file=buf, width=200, color_system=None))
    text = buf.getvalue()
    header = next(line for line in text.splitlines() if "rank" in line and "step" in line and "┃" in line)
    assert "compute" not in header and "idle" not in header and "waiting" not in header
    # a zero figure, not the tail of a real one (a host step of 150.0 µs ends in "0.0 µs")
    assert not re.search(r"(?<![\d.,])0\.0 µs", text) and LABELS["ranks.host_only"].split(":")[0] in text


def test_gpu_ranks_keep_every_column():
    rows = [{"rank": r, "has_gpu": True, "step_time_us": 100.0, "compute_us": 60.0 + r, "communication_us": 30.0,
             "idle_us": 10.0} for r in range(2)]
    mr = multi_rank(rows)
    assert mr.device_timeline is not False and mr.per_rank[1].compute_us == 61.0
    buf = io.StringIO()
    _multi_rank(mr, Console(file=buf, width=200, color_system=None))
    assert "compute" in buf.getvalue() and "waiting" in buf.getvalue()


def test_report_html_shows_the_host_step_only(tmp_path):
    d = folder(tmp_path, "multi_rank")
    doc = json.loads((d / "analysis.json").read_text())
    host = multi_rank([{"rank": r, "has_gpu": False, "host_step_us": 1000.0 + r, "step_time_us": None,
                        "compute_us": 0.0, "communication_us": 0.0, "idle_us": 0.0} for r in range(2)])
    doc["multi_rank"] = json.loads(msgspec.json.encode(host))
    (d / "analysis.json").write_text(json.dumps(doc))
    html = render_html(load_folder(d))
    ranks = html[html.index('<section id="ranks">'):]
    ranks = ranks[:ranks.index("</section>")]
    assert "<th class=\"n\">host step</th>" in ranks and "compute</th>" not in ranks
    assert LABELS["ranks.host_only"].split(":")[0] in ranks
