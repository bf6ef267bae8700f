"""report.md: the seed's experiment-report structure, from saved records."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from report_fixtures import DATA, EVIL, KINDS, with_evil_kernel

from trainprof.report.loader import load_folder
from trainprof.report.markdown import render_markdown

HEADINGS = ("## 1. Method", "## 2. Baseline profile", "## 3. Optimisations chosen and why",
            "## 4. Optimised profile", "## 5. Speed-up per iteration", "## 6. Analysis and what could still be done")


def _md(d, out=None) -> str:  # noqa: ANN001
    return render_markdown(load_folder(d), out)


def _tables_are_rectangular(md: str) -> None:
    """Every row of a table has as many cells as its header (an unescaped | would add one)."""
    rows = [line for line in md.splitlines() if line.startswith("|")]
    block: list[str] = []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if block:
            n = len(re.split(r"(?<!\\)\|", block[0]))
            assert all(len(re.split(r"(?<!\\)\|", r)) == n for r in block), block
            block = []
    assert rows


@pytest.mark.parametrize("kind", KINDS)
def test_structure_for_every_record(make_folder, kind):
    md = _md(make_folder(kind))
    pos = [md.index(h) for h in HEADINGS]
    assert pos == sorted(pos)
    assert "<script" not in md


def test_baseline_top5_and_roofline(make_folder):
    d = make_folder("cpu_run")
    (d / "roofline.png").write_bytes(b"\x89PNG")
    md = _md(d)
    base = md[md.index("## 2."):md.index("## 3.")]
    assert "**Top-5 operators** (by self CPU time" in base
    assert base.count("| `aten::") >= 5
    # this saved record predates the top-5 rows' roofline blocks: the by-shape points, said so
    assert "**Roofline of the top operators by shape**" in base and "latency" in base
    assert "![Roofline of the top operators](roofline.png)" in base
    assert "MFU" in base and "forward" in base
    method = md[md.index("## 1."):md.index("## 2.")]
    assert "FlopCounterMode" in method and "(measured)" in method and "FLOPs, not MACs" in method
    # no tune here: say which command produces the missing parts
    assert "`trainprof tune --out DIR`" in md
    assert "Effective training time ratio" in md
    _tables_are_rectangular(md)


def test_tune_gives_choices_and_speedup(make_folder):
    d = make_folder("cpu_run", "tune")
    (d / "tune.png").write_bytes(b"\x89PNG")
    md = _md(d)
    opt = md[md.index("## 3."):md.index("## 4.")]
    assert "The optimizer step is a large share" in opt and "| gc_disable |" in opt and "**kept**" in opt
    assert "![Tuning ladder](tune.png)" in opt
    after = md[md.index("## 4."):md.index("## 5.")]
    assert "--gc-disable" in after and "--profile --out runs/optimised" in after
    speed = md[md.index("## 5."):md.index("## 6.")]
    assert "**Verified speed-up: 1.22×**" in speed
    assert "bf16: not faster" in md[md.index("## 6."):]
    # the guard's evidence where tune.json has it (bf16), the bare verdict where it does not
    assert "| ok (\\|Δloss\\| 0.012, Δval -0.004) |" in opt and "| 1.07 | 1.07 |" in opt
    _tables_are_rectangular(md)


def test_unconfirmed_knobs_are_reported_as_no_speed_up(make_folder):
    d = make_folder("cpu_run", "tune")
    doc = json.loads((d / "tune.json").read_text())
    doc["best"].update(knobs=[], speedup=1.0, unconfirmed={
        "knobs": ["gc_disable"], "reason": "the kept knobs measured 1.01× the baseline in 3 alternating pairs "
                                           "(needs ≥ 1.03×)"})
    doc["best"]["verify"].update(speedup_median=1.01, speedup_min=0.9, speedup_max=1.1)
    (d / "tune.json").write_text(json.dumps(doc))
    md = _md(d)
    speed = md[md.index("## 5."):md.index("## 6.")]
    # no optimised configuration to profile: section 4 does not offer the baseline's command as one
    assert "The best configuration has not been profiled" not in md[md.index("## 4."):md.index("## 5.")]
    # "kept" means in the final configuration, in the ladder table and in this text alike
    assert "**No verified speed-up**: the kept knobs measured 1.01×" in speed
    assert "gc_disable passed their trials but are not kept" in speed
    assert "Verified speed-up: " not in speed
    assert "| passed their trials, not kept (gc_disable), ladder trial |" in speed
    opt = md[md.index("## 3."):md.index("## 4.")]
    assert "| gc_disable |" in opt and "**kept**" not in opt


def test_optimised_profile_from_a_second_analysis(make_folder):
    d = make_folder("cpu_run", "tune")
    shutil.copy(DATA / "gpu_trace" / "analysis.json", d / "analysis_optimised.json")
    md = _md(d)
    after = md[md.index("## 4."):md.index("## 5.")]
    assert "**Top-5 operators** (by GPU time" in after and "**Top-5 kernels:**" in after
    assert "Still flagged in the optimised profile" in md


def test_kernel_names_cannot_break_tables(make_folder):
    d = make_folder("gpu_trace")
    with_evil_kernel(d / "analysis.json")
    doc = json.loads((d / "analysis.json").read_text())
    doc["ranks"][0]["top_kernels"][1]["name"] = "a|b`c"
    (d / "analysis.json").write_text(json.dumps(doc))
    md = _md(d)
    _tables_are_rectangular(md)
    # Raw HTML only inside code spans (CommonMark shows those as text); escaped in prose.
    prose = re.sub(r"`[^`]*`", "", md)
    assert "<script>" not in prose and "</td>" not in prose and "\\<script\\>" in prose
    assert EVIL in md  # the name itself kept whole, in a code span
    assert "`a\\|b'c`" in md


def test_images_are_linked_relative_to_the_report(make_folder, tmp_path):
    d = make_folder("cpu_run")
    (d / "roofline.png").write_bytes(b"\x89PNG")
    out = tmp_path / "elsewhere" / "reports"
    out.mkdir(parents=True)
    md = _md(d, out)
    assert "](../../rep/roofline.png)" in md


def test_gpu_trace_with_cpu_roofs_gets_a_caveat(make_folder):
    md = _md(make_folder("multi_rank"))
    assert "and 1 more rank:" in md and "**Caveat:** these roofs were measured on the CPU" in md
    assert "**Caveat:**" not in _md(make_folder("cpu_run"))


def test_outlier_driven_phase_is_shown_with_its_median(make_folder):
    """Six measured steps: optimizer 0.02 s, two of them 1.02 s (stalls). Mean 0.353 s,
    median 0.02 s; median step = 0.30 + 0.58 + 0.02 = 0.90 s → 0.02 / 0.90 = 2.2%."""
    d = make_folder("cpu_run", "gpu_trace")
    run = json.loads((d / "run.json").read_text())
    steps = []
    for i in range(8):
        opt = 1.02 if i in (4, 6) else 0.02
        steps.append({**run["steps"][0], "step": i, "data_s": 0.0, "h2d_s": 0.0, "forward_s": 0.30,
                      "backward_s": 0.58, "optimizer_s": opt, "other_s": 0.0, "step_time_s": 0.88 + opt})
    run["steps"] = steps
    (d / "run.json").write_text(json.dumps(run))
    md = _md(d)
    assert "; median 20.0 ms (2.2%)\\*" in md
    assert "a few slow steps drive this phase's mean" in md
