"""report.html's Findings section as a view: each finding's words as written and its meta line
(id, gain, confidence, bottleneck), in report.md's order (report/findings_list.py). The gains go
through report/figures.show with their field in the record, as the template showed them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainprof.recordtypes.base import or_default
from trainprof.report.figures import show
from trainprof.report.findings_list import listed


@dataclass(frozen=True)
class FindingView:
    severity: Any  # the record's words, as written (the template escapes them)
    title: Any
    evidence: Any
    fix: Any
    meta: str


@dataclass(frozen=True)
class FindingsView:
    items: tuple[FindingView, ...]
    bottleneck: str | None  # the first rank's principal bottleneck, None when it names none
    gain_of: str  # what a gain is a share of


def gain_of(a: Any, run: Any) -> str:
    """Step time, or the whole trace when it has no steps (and no run.json counts them)."""
    r = a.ranks[0] if a and a.ranks else None
    return "the trace's time" if r is not None and not or_default(r.steps, 0) and not run else "step time"


def _meta(f: dict, at: str, of: str) -> str:
    if f.get("estimated_gain_pct"):
        gain = f"up to {show(f['estimated_gain_pct'], 'pct_value', at + '.estimated_gain_pct')} of {of}"
        if f.get("projected_gain_pct") is not None:
            gain += f", projected {show(f['projected_gain_pct'], 'pct_value', at + '.projected_gain_pct')}"
    else:
        gain = "a caveat: no speed-up claimed"
    tail = f" · {f['bottleneck']}" if f.get("bottleneck") else ""
    return f"{f.get('id')} · {gain} · {f.get('confidence')} confidence{tail}"


def findings_view(a: Any, run: Any, on_page: bool) -> FindingsView | None:
    """The section of analysis `a` (else of `run`'s findings); None when `on_page` is false and
    no finding is there (a page with neither run nor profile has no Findings section)."""
    found = listed(a, "analysis", run)
    if not found and not on_page:
        return None
    of = gain_of(a, run)
    items = tuple(FindingView(f.get("severity"), f.get("title"), f.get("evidence"), f.get("fix"), _meta(f, at, of))
                  for at, f in found)
    rank = a.ranks[0] if a and a.ranks else None
    return FindingsView(items, (rank.bottleneck or None) if rank else None, of)
