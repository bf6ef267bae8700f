"""Which ranks a job prints in full (report/rank_detail.py): planted on the shipped two-rank
record made a six-rank job, rank 3 the slowest per step and rank 5 the compute straggler."""

from __future__ import annotations

import io
import json
from pathlib import Path

import msgspec
from rich.console import Console

from trainprof.recordtypes.analysis import Analysis
from trainprof.report.analysis_terminal import print_analysis
from trainprof.report.rank_detail import detail_ranks, left_out_note

RECORD = Path(__file__).resolve().parents[2] / "data" / "reports" / "multi_rank" / "analysis.json"


def _six_ranks() -> Analysis:
    d = json.loads(RECORD.read_text())
    one = d["ranks"][0]
    d["ranks"] = [{**one, "rank": r} for r in (0, 1, 2, 3, 4, 5)]
    row = d["multi_rank"]["per_rank"][0]
    d["multi_rank"]["per_rank"] = [{**row, "rank": r, "step_time_us": 600_000.0 + (50_000 if r == 3 else r)}
                                   for r in range(6)]
    d["multi_rank"]["stragglers"] = [{**d["multi_rank"]["stragglers"][0], "rank": 5}]
    d["multi_rank"]["ranks"] = 6
    return msgspec.convert(d, Analysis)


def test_a_large_job_prints_the_first_the_slowest_and_the_straggler():
    a = _six_ranks()
    shown = detail_ranks(a, 4)
    assert shown == [(0, "first"), (3, "slowest step"), (5, "computes more while the others wait")]
    note = left_out_note(a, shown)
    assert note.startswith("Full tables above for 3 of the 6 ranks: rank 0 (first); rank 3 (slowest step);")
    assert "--all-ranks" in note
    buf = io.StringIO()
    print_analysis(a, Console(file=buf, width=200, color_system=None), most=4)
    text = buf.getvalue()
    headers = [line.split()[1] for line in text.splitlines() if line.startswith("rank ") and "/" in line]
    assert headers == ["0", "3", "5"] and "Full tables above for 3 of the 6 ranks" in text
    assert "Ranks (6), per step" in text  # the job's table still lists every rank


def test_every_rank_when_asked_or_when_few():
    a = _six_ranks()
    assert [i for i, _ in detail_ranks(a, None)] == [0, 1, 2, 3, 4, 5] and left_out_note(a, detail_ranks(a, None)) is None
    assert [i for i, _ in detail_ranks(a, 6)] == [0, 1, 2, 3, 4, 5]
    assert detail_ranks(a, 2) == [(0, "first"), (3, "slowest step")]  # at most `most`, in record order
