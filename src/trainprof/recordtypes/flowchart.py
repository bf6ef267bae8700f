"""Seed 002's bottleneck flowchart as a record field (diagnose/flowchart.py computes it once,
from run.json and the rank's analysis; run.json and analysis.json store it as `flowchart`), so
report.md/html and the terminal lay out the path as stored and each number in it is a field.
Records written before the field existed lack it (UNSET) and still read; a report computes
their path from the same records instead (report/context.py)."""

from __future__ import annotations

from typing import Optional

from trainprof.recordtypes.base import Num, Part


class ChartTest(Part, kw_only=True):
    """One test of the chart as the record answered it."""

    question: str
    value: Optional[Num]
    """the number read (%), rounded to 0.1 as shown; None when the record lacks it"""
    threshold: Num
    """the test's threshold (%); 0 for a "which is largest" test, which has none"""
    answer: str
    """"yes" | "no" | "unknown" | the part named by a "which" test"""
    passed: Optional[bool]
    """the yes/no test held (True) or not (False); None for unknown and "which" tests"""
    source: str
    """where the number came from"""


class Flowchart(Part, kw_only=True):
    branch: str
    """the principal branch the path ends on ("data loading: I/O-bound", "near the ceiling", ...)"""
    path: list[ChartTest]
    """the tests in the order the chart asks them"""
