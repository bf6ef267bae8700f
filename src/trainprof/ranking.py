"""The one key every list of findings is ordered by (issue #39 item 6): terminal, report.md,
report.html, diff, the job's findings and the principal bottleneck all import it from here,
below analysis/ and diagnose/, so no layer has to reach sideways for it. Pure: a finding's
bound and projection in, a number out."""

from __future__ import annotations


# What a bound-only finding is ranked by: this share of its bound (docs/rules.md, "Ranking").
# Measured: the median of projection ÷ bound over the shipped traces' findings that have both
# (issue #39: 0.822 on 39 findings of 27 traces; 0.65 once the steps became the spans of their
# GPU work and queueing stopped reading as launch overhead, #39 items 1-2; 0.71 (0.706) with the
# one definition of exposed communication too, item 7; tests/integration/test_cli_analyze.py re-measures it). A bound is an upper bound; ranked at face value a 34.6% bound no projection
# checked outranked a 32.5% projection whose measured fix gave 27.6%.
BOUND_DISCOUNT = 0.71


def ranking_gain(bound_pct: float | None, projected_pct: float | None) -> float:
    """The one figure every list of findings is ordered by (terminal, report.md, report.html,
    diff, the principal bottleneck): the projected gain where the what-if has one, else
    BOUND_DISCOUNT × the bound."""
    if projected_pct is not None:
        return float(projected_pct)
    return BOUND_DISCOUNT * float(bound_pct or 0.0)


def rank_key(finding) -> tuple:
    """Biggest first by what a fix gives back (ranking_gain); ties by the bound, then the id.
    `finding`: a recordtypes.finding.Finding (read by attribute: this layer imports no record
    type); a field absent from the record (UNSET) or null counts as no figure."""
    b = _figure(finding.estimated_gain_pct) or 0.0
    return (-ranking_gain(b, _figure(finding.projected_gain_pct)), -b, finding.id)


def _figure(v: object) -> float | None:
    """A gain field as a number, or None where it holds none (null, or msgspec's UNSET)."""
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


