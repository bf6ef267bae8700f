"""Every rule, its module imported so it has registered (diagnose/registry.py): for what reads
the whole catalogue (docs, tests), apart from the registry so no rule module imports itself back."""

from __future__ import annotations

from trainprof.diagnose import engine, job_rules, pipeline_rules  # noqa: F401 - each registers its rules
from trainprof.diagnose.registry import RULES, Rule


def catalogue() -> dict[str, Rule]:
    """id -> Rule, in declaration order, every scope."""
    return dict(RULES)


def scenarios() -> dict[str, str]:
    """Finding id -> the what-if scenario its rule declares, for every rule that has one."""
    return {i: r.scenario for i, r in RULES.items() if r.scenario}
