"""A `trainprof profile` record of a model fed features counts samples, not tokens
(profile.batch_unit): the step table, the summary, report.md and report.html all label the
rate samples/s; issue #37 item 5.1 (the step table said tok/s while the summary said samples/s)."""

from __future__ import annotations

import io
import json

from rich.console import Console

from trainprof.report.html import render_html
from trainprof.report.loader import load_folder
from trainprof.report.markdown import render_markdown
from trainprof.report.terminal import print_run


def _samples_folder(make_folder):  # noqa: ANN001, ANN202
    d = make_folder("cpu_run")
    doc = json.loads((d / "run.json").read_text())
    # what `trainprof profile` writes for a program whose first input is [16, 32] features
    doc.update(command=["python", "train.py"], status="completed", exit_code=0,
               profile={"batch_unit": "samples", "batch_shape": [16, 32], "boundary": "optimizer.step",
                        "flops_step": 1, "warmup_steps": 2})
    (d / "run.json").write_text(json.dumps(doc))
    return d


def test_every_renderer_says_samples_per_second(make_folder):
    b = load_folder(_samples_folder(make_folder))
    assert b.run.batch_unit == "samples"
    buf = io.StringIO()
    print_run(b.run, Console(file=buf, width=200, color_system=None))
    term = buf.getvalue()
    header = next(line for line in term.splitlines() if "loss" in line and "step" in line)
    assert "samples/s" in header  # the step table's column, as the summary's row below it
    assert "samples/s" in term.split("Summary", 1)[1]
    md = render_markdown(b)
    assert "| step time | samples/s |" in md
    html = render_html(b)
    assert "samples/s" in html
    for text in (term, md, html):
        assert "tokens/s" not in text and "tok/s" not in text


def test_a_run_record_still_says_tokens(make_folder):
    b = load_folder(make_folder("cpu_run"))
    buf = io.StringIO()
    print_run(b.run, Console(file=buf, width=200, color_system=None))
    assert b.run.batch_unit == "tokens" and "tokens/s" in buf.getvalue()
    assert "| step time | tokens/s |" in render_markdown(b)
