"""`trainprof study` end to end on the tiny preset, shortened (4-step runs, one knob, no
verify pairs): every section of report.md is filled and every number in it is found in a
record of the folder (as stored, or in the unit the report prints it in). The budget is a
cap (a study takes what its stages need, ~20 s idle here): 20 minutes, so that a loaded
machine still runs every stage (at load 10 the baseline alone took 46 s).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import msgspec
import pytest

from trainprof.cli import main

SHORT = ["--micro-batch", "1", "--seq-len", "16", "--steps", "4", "--tune-steps", "3", "--eval-batches", "1",
         "--knobs", "gc_disable", "--verify-trials", "0", "--budget-minutes", "20"]
SECTIONS = ("## 1. Method", "### Stages", "## 2. Baseline profile", "**Top-5 operators**",
            "**Roofline of the top-5 operators**", "Nsight Compute", "## 3. Optimisations chosen and why",
            "## 4. Optimised profile", "## 5. Speed-up per iteration", "## 6. Analysis and what could still be done",
            "### Problems met", "### Reproduce", "## References")
# the units the report converts records into: s→ms, s→µs (a time under 1 ms, report/figures.py), fraction→%,
# bytes→MiB/GiB, µs→ms, params→M
SCALES = (1, 1e3, 1e6, 1e-3, 100, 1e-6, 2**-20, 2**-30, 2**-10, 1e-9, 1e-12)


def _numbers(obj, out: list[float], siblings: list[list[float]]) -> None:
    if isinstance(obj, bool):
        return
    if isinstance(obj, (int, float)):
        if math.isfinite(obj):
            out.append(float(obj))
        return
    if isinstance(obj, dict):
        local = [float(v) for v in obj.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if 1 < len(local) <= 40:  # a summary-like record (run summary, a top-op row), not a long table
            siblings.append(local)
        for v in obj.values():
            _numbers(v, out, siblings)
    elif isinstance(obj, list):
        for v in obj:
            _numbers(v, out, siblings)


def _records(folder: Path) -> tuple[list[float], list[list[float]]]:
    values: list[float] = []
    siblings: list[list[float]] = []
    for p in folder.rglob("*.json"):
        _numbers(json.loads(p.read_text("utf-8")), values, siblings)
    # the reference context (#40: published MFU/HFU and ETTR figures) is sourced data, not a
    # measurement of this study: its numbers are in hardware/references.toml, the record they come from
    import tomllib

    from trainprof.hardware import references

    _numbers(tomllib.loads(Path(references.__file__).with_suffix(".toml").read_text("utf-8")), values, siblings)
    return values, siblings


def _found(x: float, decimals: int, values: list[float], siblings: list[list[float]], exp: int = 0) -> bool:
    tol = 0.5 * 10 ** (exp - decimals) + 1e-9  # 9.86e+06 is 9,860,000 ± 5,000
    if any(abs(v * k - x) <= tol * max(1.0, 1e-3 * abs(x)) for v in values for k in SCALES):
        return True
    # shares and ratios the report derives from two fields of one record (data_s / step_time_s)
    for group in siblings:
        for a in group:
            for b in group:
                if b and any(abs(a / b * k - x) <= tol for k in (1, 100)):
                    return True
    return False


NUM = re.compile(r"(?<![\w.])[-+−]?\d[\d,]*(?:\.(\d+))?(?:e([-+]?\d+))?")


@pytest.mark.slow
def test_study_end_to_end_report_is_complete_and_traceable(tmp_path, capsys):
    out = tmp_path / "study"
    assert main(["study", *SHORT, "--out", str(out)]) == 0
    # progress off a terminal: the study's lines on its stderr, and each `trainprof run` child's,
    # whose output is a pipe, in its log
    err = capsys.readouterr().err
    assert re.search(r"^\d\d:\d\d:\d\d trainprof study: \[1/5\] baseline started", err, re.M)
    assert "trainprof run: training started: 4 steps" in (out / "logs" / "baseline.log").read_text()
    for rel in ("study.json", "journal.jsonl", "baseline/run.json", "baseline/analysis.json", "baseline/trace.json.gz",
                "tune/tune.json", "tune/journal.jsonl", "optimised/run.json", "optimised/analysis.json", "diff.json",
                "report.md", "report.html", "reproduce.sh", "requirements.txt"):
        assert (out / rel).is_file(), rel
    md = (out / "report.md").read_text("utf-8")
    for s in SECTIONS:
        assert s in md, f"missing section {s!r}"
    assert not re.search(r"\bcopy (its|`)", md)  # the study fills every part itself: no instructions to copy files
    assert "run.json" in md and "validation loss" in md
    assert "### Bottleneck flowchart (seed 002)" in md  # laid out from baseline/run.json's `flowchart`
    assert re.search(r"^\*\*Stop criterion: (met|not met|undecided|unknown)\.\*\*", md, re.M)  # study.json's stop
    study = json.loads((out / "study.json").read_text())
    assert [(s["stage"], s["status"]) for s in study["stages"]] == [
        (x, "done") for x in ("baseline", "tune", "optimised", "diff", "report")]
    assert study["ncu"]["collect"].startswith("ncu ") and study["speedup"]["runs"]["base_step_s"] > 0
    assert study["spent_s"] <= study["budget_s"] and study["accuracy"]["verdict"] in ("accepted", "rejected")

    values, siblings = _records(out)
    body = md.split("## References")[0]
    body = re.sub(r"`[^`]*`", "", body)  # names, commands and shapes in code spans are not measurements
    body = re.sub(r"```.*?```", "", body, flags=re.S)
    body = re.sub(r"arXiv:\d{4}\.\d{4,5}", "", body)  # paper identifiers in the references' sources
    body = re.sub(r"\b\d+(?:\.\d+)?B\b", "", body)  # the reference table's model names ("530B")
    body = re.sub(r"et al\. \d{4}", "", body)  # citation years ("Williams et al. 2009") are not measurements
    body = re.sub(r"\b\d+\.\d+\.\d+\S*", "", body)  # nor versions ("torch 2.13.0+cpu")
    body = re.sub(r"\b\d{4}-\d{2}-\d{2}\b", "", body)  # nor dates (the CPU peak's "measured 2026-11-26")
    missing = []
    for m in NUM.finditer(body):
        text = m.group(0).replace(",", "").replace("−", "-")
        try:
            x = float(text)
        except ValueError:
            continue
        if abs(x) < 10 and m.group(1) is None:
            continue  # small integers: section numbers, ranks, counts of five
        if not _found(x, len(m.group(1) or ""), values, siblings, int(m.group(2) or 0)):
            missing.append(m.group(0))
    assert not missing, f"numbers in report.md found in no record of the folder: {missing[:20]}"

    # every figure report.md and report.html tag (report/figures.py) is its record field's value,
    # the study's own (budget, stages, speed-up, accuracy: study.json) included
    from trainprof.report import figures
    from trainprof.report.html import render_html
    from trainprof.report.loader import load_folder
    from trainprof.report.markdown import render_markdown

    b = load_folder(out)
    records = {k: json.loads(msgspec.json.encode(v)) if isinstance(v, msgspec.Struct) else v
               for k in ("run", "analysis", "optimised", "tune", "diff", "study", "optimised_run")
               if (v := getattr(b, k)) is not None}
    for render in (render_markdown, render_html):
        with figures.capture() as shown:
            render(b)
        fields = {s.field for s in shown}
        assert {"study.budget_s", "study.stages[0].wall_s", "study.accuracy.val_new"} <= fields, render
        assert {f for f in fields if ".flowchart.path[0]." in f}, render  # the flowchart's numbers, tagged
        for s in shown:
            try:
                value = figures.resolve(records, s.field)
            except (KeyError, IndexError, TypeError):
                value = None
            assert (s.value is None and value is None) or figures.same_value(s.value, value), (s, value)

    # `trainprof report` on the study folder renders the same report.md
    before = md
    assert main(["report", str(out)]) == 0
    assert (out / "report.md").read_text("utf-8") == before

    # resume of a finished study redoes nothing and exits 0
    journal = (out / "journal.jsonl").read_text()
    assert main(["study", "--resume", "--out", str(out)]) == 0
    assert (out / "journal.jsonl").read_text().count('"stage": "baseline"') == journal.count('"stage": "baseline"')


def test_study_rejects_bad_flags_before_any_work(tmp_path, capsys):
    assert main(["study", "--steps", "2", "--out", str(tmp_path / "x")]) == 2
    assert "study.train.steps (--steps) must be ≥ 3, got 2" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    assert main(["study", "--knobs", "warp_drive", "--out", str(tmp_path / "y")]) == 2
    assert not (tmp_path / "y").exists()
    assert main(["study", "--resume", "--out", str(tmp_path / "z")]) == 2
