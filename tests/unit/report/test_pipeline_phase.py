"""A `run --pp` stage's waits, sends and receives (the bubble) are their own phase, `pipeline_s`
(collect/timers.py, workload/pipeline.Split): summed into the summary, split after backward,
counted as communication, and shown as a "pipeline" column by the terminal, report.md and
report.html. A planted record: the shipped CPU run with half of each step's forward moved to
the pipeline's waits, so every figure is known before the code runs."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from trainprof.analysis.run.step_split import class_shares, phase_shares
from trainprof.analysis.run.throughput import summarise
from trainprof.recordtypes.run import StepRecord
from trainprof.report.html import render_html
from trainprof.report.loader import load_folder
from trainprof.report.markdown import render_markdown
from trainprof.report.terminal import print_run

ORDER = ["data_s", "h2d_s", "forward_s", "backward_s", "pipeline_s", "optimizer_s", "other_s"]


def _piped_folder(make_folder):  # noqa: ANN001, ANN202
    d = make_folder("cpu_run")
    doc = json.loads((d / "run.json").read_text())
    for s in doc["steps"]:
        s["forward_s"], s["pipeline_s"] = s["forward_s"] / 2, s["forward_s"] / 2
    summ = doc["summary"]
    summ["forward_s"], summ["pipeline_s"] = summ["forward_s"] / 2, summ["forward_s"] / 2
    summ.pop("phase_split", None)  # the loader splits the steps again, as for a record without it
    (d / "run.json").write_text(json.dumps(doc))
    return d


def test_the_summary_splits_the_waits_after_backward_as_communication():
    steps = [StepRecord(step=i, step_time_s=10.0, data_s=1.0, h2d_s=0.0, forward_s=2.0, backward_s=3.0,
                        optimizer_s=1.0, other_s=0.5, tokens=8, loss=1.0, pipeline_s=2.5) for i in range(4)]
    s = summarise(steps, flops_per_step=1.0, peak_tflops=None, warmup_steps=1)
    assert s.pipeline_s == 2.5 and s.forward_s == 2.0
    assert list(s.phase_split) == ORDER and s.phase_split["pipeline_s"]["mean_share_pct"] == 25.0
    assert sum(p["mean_share_pct"] for p in s.phase_split.values()) == pytest.approx(100.0)
    # the waits are communication, not host overhead (optimizer + other = 15%) nor compute (50%)
    assert class_shares(phase_shares(steps)) == {"data": 10.0, "compute": 50.0, "communication": 25.0,
                                                 "host overhead": 15.0}


def test_every_renderer_shows_the_pipeline_column(make_folder):
    b = load_folder(_piped_folder(make_folder))
    split = b.run.summary.phase_split
    assert list(split) == ORDER
    buf = io.StringIO()
    print_run(b.run, Console(file=buf, width=220, color_system=None))
    term = buf.getvalue()
    header = next(line for line in term.splitlines() if "loss" in line and "step" in line)
    assert header.index("bwd") < header.index("pipeline") < header.index("opt")
    assert "pipeline " in term.split("Summary", 1)[1]  # the split line
    md = render_markdown(b)
    assert "| data | h2d | forward | backward | pipeline | optimizer | other | step |" in md
    html = render_html(b)
    assert '<th class="n">backward</th><th class="n">pipeline</th><th class="n">optimizer</th>' in html
    # the flowchart's run branch counts the waits as communication (a quarter of this step: the largest part)
    assert "a pipeline stage&#39;s waits" in html and "<strong>communication</strong>" in html


def test_a_record_without_a_pipeline_shows_no_column(make_folder):
    b = load_folder(make_folder("cpu_run"))
    assert "pipeline_s" not in b.run.summary.phase_split
    buf = io.StringIO()
    print_run(b.run, Console(file=buf, width=220, color_system=None))
    md = render_markdown(b)
    assert "pipeline" not in buf.getvalue() and "| data | h2d | forward | backward | optimizer | other | step |" in md
    html = render_html(b)
    assert '<th class="n">pipeline</th>' not in html and "pipeline stage" not in html
