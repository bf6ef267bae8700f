"""report.md and report.html list the findings in one order (report/findings_list.py): info
after every claim, claims by what a fix gives back, whatever their severity label."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from trainprof.cli import main

REPORTS = Path(__file__).parents[2] / "data" / "reports"


def _plant_order(folder: Path) -> None:
    """The finding with the smallest gain becomes `high` and the biggest `low`: a severity sort
    and a gain sort now disagree."""
    import json

    p = folder / "analysis.json"
    doc = json.loads(p.read_text())
    fs = doc["ranks"][0]["findings"]
    claims = [f for f in fs if f["severity"] != "info"]
    assert len(claims) >= 2
    claims[0]["severity"], claims[-1]["severity"] = "low", "high"
    p.write_text(json.dumps(doc))


@pytest.mark.parametrize("name", ["gpu_trace", "multi_rank"])
def test_markdown_and_html_list_findings_in_the_same_order(tmp_path, name, capsys):
    src = tmp_path / "in"
    shutil.copytree(REPORTS / name, src)
    if name == "gpu_trace":
        _plant_order(src)
    assert main(["report", str(src), "--out", str(tmp_path / "out")]) == 0
    md = (tmp_path / "out" / "report.md").read_text()
    html = (tmp_path / "out" / "report.html").read_text()
    in_md = re.findall(r"^\d+\. \*\*(.+?)\*\* \(", md, flags=re.M)
    in_html = re.findall(r"</span>([^<]+)</h3>", html)
    assert len(in_md) >= 2 and in_md == [t.replace("&#39;", "'").replace("&amp;", "&") for t in in_html]
