"""A diff's phrases, built once in Python for the three reports that show it (report.html's
before/after section, report.md's, diff.md): the operators' table title, the verdict line and
each row's change column (report/diff_text.py words them, as the terminal does); diff.md's
sides and findings' gains. Passed through the templates'
context, so no template calls a phrase function (issue #44 item 5: `ops_title` was a function in
report.md's templates and a string in report.html's; diff.md took `side_text`, `side_name` and
`gain` as functions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainprof.recordtypes.diff import Diff
from trainprof.report.diff_text import change, gain, has_gpu, ops_title, side_name, side_text, verdict_line


@dataclass(frozen=True)
class DiffView:
    ops_title: str  # what the operators' times are (GPU time, self CPU time)
    verdict: str | None  # the headline of a diff of two run folders; None without a verdict
    ops_change: tuple[str, ...]  # the change column of `ops.top`, row by row
    kernels_change: tuple[str, ...]  # the same for `kernels.top`
    gpu: bool  # a GPU trace on either side: the kernels' table shows
    sides: tuple[tuple[str, str, str], ...]  # (base | new, its path, what it holds) for each side present
    findings: tuple[tuple[Any, str, str], ...]  # (finding, its gain before, after), as its analysis says them


def diff_view(d: Diff) -> DiffView:
    return DiffView(ops_title=ops_title(d), verdict=verdict_line(d.verdict) if d.verdict else None,
                    ops_change=tuple(change(r) for r in d.ops.top),
                    kernels_change=tuple(change(r) for r in d.kernels.top), gpu=has_gpu(d),
                    sides=tuple((label, side_name(s), side_text(s)) for label, s in (("base", d.base), ("new", d.new))
                                if s is not None),
                    findings=tuple((f, gain(f.base_gain_pct, f.base_projected_pct),
                                    gain(f.new_gain_pct, f.new_projected_pct)) for f in d.findings))
