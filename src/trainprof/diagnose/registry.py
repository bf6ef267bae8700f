"""Which rules exist, declared where each is defined (issue #44 item 2).

A rule registers itself with `@rule(id, scenario=..., path_kind=...)` above its function:
its finding id (docs/rules.md has a row per id: tests/unit/diagnose/test_rule_ids_documented.py),
the standard what-if scenario that removes its cause (analysis/graph/whatif.py labels; the
finding's bound and projection are read from it, analysis/graph/projection.py) and the
critical-path kind that cause shows up as (`why_below`). Adding a rule: its function with
this decorator in a rule module, and its row in docs/rules.md. The whole catalogue, every rule
module imported: diagnose/catalogue.py.

Scopes: `rank` rules are the engine's loop (diagnose/engine.py), each `fn(x: RuleInput) ->
Finding | None` over one input record: one rank's analysis record, the run record (either
may be None) and the thresholds; `after` rules take the same record with the rank rules'
findings in `found` (busy_but_slow); `job` rules read the multi-rank record with their
thresholds (stragglers, late_ranks, pipeline_bubble: `fn(multi, th)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # annotations only: the rules' modules import the records themselves
    from trainprof.diagnose.finding import Finding, Thresholds
    from trainprof.recordtypes.analysis import Rank
    from trainprof.recordtypes.run import RunRecord

SCOPES = ("rank", "after", "job")


@dataclass(frozen=True)
class RuleInput:
    """What a rank rule reads, one record (issue #44: one signature for every rule, so a rule
    that needs one more input does not change the other sixteen's). The engine builds it once
    per rank; `after` rules get a copy with the findings filled in."""

    rank: Rank | None
    """the rank's analysis record (analysis.json's ranks[i], typed), None for a run without a trace"""
    run: RunRecord | None
    """run.json (typed), None for a trace analysed alone"""
    th: Thresholds
    found: tuple[Finding, ...] = ()
    """the rank rules' findings, for `after` rules (busy_but_slow subtracts their claims)"""


@dataclass(frozen=True)
class Rule:
    id: str
    fn: Callable
    scenario: str | None = None
    """the what-if scenario's label that removes this cause ("remove host_sync"); None: no edit"""
    path_kind: str | None = None
    """the critical-path kind the cause shows up as (projection.why_below); with a scenario only"""
    scope: str = "rank"


RULES: dict[str, Rule] = {}


def rule(*ids: str, scenario: str | None = None, path_kind: str | None = None, scope: str = "rank"):
    """Register the decorated function as the rule writing findings `ids` (one for a rank rule;
    a job rule may write several: stragglers or late_ranks)."""
    if scope not in SCOPES or (scenario is None) != (path_kind is None):
        raise ValueError(f"rule {ids}: scope {scope!r}, scenario {scenario!r}, path_kind {path_kind!r}")

    def add(fn: Callable) -> Callable:
        for i in ids:
            if i in RULES:
                raise ValueError(f"finding id {i!r} is declared twice ({RULES[i].fn.__qualname__}, {fn.__qualname__})")
            RULES[i] = Rule(i, fn, scenario, path_kind, scope)
        return fn

    return add


def scenario_of(finding_id: str) -> str | None:
    r = RULES.get(finding_id)
    return r.scenario if r else None


def path_kind_of(finding_id: str) -> str | None:
    r = RULES.get(finding_id)
    return r.path_kind if r else None


def rank_rules(scope: str) -> list[Rule]:
    """The engine's loops, in declaration order: `rank` (each over the records alone), then
    `after` (over their findings too). The order only shows in busy_but_slow's list of the
    claims it subtracts (findings are sorted by rank_key, one per id)."""
    return [r for r in RULES.values() if r.scope == scope]
