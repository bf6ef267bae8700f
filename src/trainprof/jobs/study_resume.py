"""What `study --resume` checks before it continues: the same study, and its budget.

The configuration is the journal's: a flag given on the command line that differs from it
(`--preset`, `--steps`, `--micro-batch`, `--knobs`, `--device`, ...) is refused with one line
naming every differing field, as `run --resume` refuses a changed checkpoint (issue #33: a
changed --preset or --steps was ignored without a word); `--resume-anyway` continues with
the new values for the stages still to run, and the journal and study.json record the change.
A flag not given keeps the journal's value.

The budget is the journal's too, less what earlier sessions spent; `--budget-minutes M`
given on the resume is a new budget from now (M minutes more; the output says so).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from trainprof.errors import UsageError
from trainprof.flags import flag
from trainprof.jobs import study_journal
from trainprof.jobs.study_budget import Budget, spent_in_journal
from trainprof.jobs.study_config import StudyConfig
from trainprof.report.formatting import duration

NOT_CONFIG = ("budget_minutes",)  # a resume may change it: that is what resuming with more time is for


def _saved_config(entries: list[dict], path: Path) -> dict[str, Any]:
    plans = [e for e in entries if e.get("stage") == "plan"]
    if not plans:
        raise UsageError(f"{path}: no plan entry (not a study journal)")
    return dict(plans[-1]["config"])  # a --resume-anyway appends the changed plan


def differences(saved: dict[str, Any], now: StudyConfig, given: set[str]) -> list[str]:
    """`--flag old → new` for each configuration flag given on the command line that differs
    (the journal's flat record, key by key: jobs/study_config.py)."""
    out = []
    for name, new in now.record().items():
        if name in NOT_CONFIG or name not in given:
            continue
        old = saved.get(name)
        if name in ("knobs", "command", "arg_knob", "env_knob"):
            old, new = tuple(old or ()), tuple(new or ())
        if old != new:
            show = (lambda v: ",".join(v) or "the default ladder") if name == "knobs" else \
                (lambda v: " ".join(v) or "none") if name in ("command", "arg_knob", "env_knob") else repr
            out.append(f"{'the command' if name == 'command' else flag(name)} {show(old)} → {show(new)}")
    return out


def resume_config(out: Path, cfg: StudyConfig, given: set[str], *, anyway: bool) -> tuple[StudyConfig, list[str]]:
    """(the configuration to continue with, the changes --resume-anyway accepted)."""
    journal = out / "journal.jsonl"
    if not journal.is_file():
        raise UsageError(f"--resume needs --out DIR holding the journal.jsonl of an earlier study ({out})")
    saved = _saved_config(study_journal.read(journal), journal)
    diffs = differences(saved, cfg, given)
    if diffs and not anyway:
        raise UsageError(f"--resume {out}: the configuration differs from the study's: {'; '.join(diffs)} (pass the "
                         "same values or leave them out, or --resume-anyway to continue with the new ones)")
    now = cfg.record()
    if diffs:
        saved = {**saved, **{k: now[k] for k in given if k in now and k not in NOT_CONFIG}}
    return study_journal.checked_config(saved, f"{journal}: the plan entry's config"), diffs


def resume_budget(out: Path, saved_minutes: float, budget_minutes: float | None,
                  clock: Callable[[], float]) -> Budget:
    """The budget of a resumed study: the journal's less what was spent, or `budget_minutes`
    from now when given."""
    entries = study_journal.read(out / "journal.jsonl")
    spent = spent_in_journal(entries)
    totals = [e["budget_s"] for e in entries if e.get("stage") in ("plan", "session") and e.get("budget_s") is not None]
    total = totals[-1] if totals else 60.0 * saved_minutes
    now = clock()
    if budget_minutes is not None:
        return Budget(spent + 60.0 * budget_minutes, spent, now, clock,
                      note=f"--budget-minutes {budget_minutes:g} on --resume: a new budget of "
                           f"{budget_minutes:g} min from now, after {spent / 60:.1f} min spent before")
    left = total - spent
    return Budget(total, spent, now, clock,
                  note=f"resumed: {spent / 60:.1f} of the {total / 60:g} min budget spent before, "
                       f"{duration(max(0.0, left), 's', 'wall')} left" + ("" if left > 0 else
                                                                " (pass --budget-minutes M for M more minutes)"))


def plan_entry(cfg: StudyConfig, budget_s: float, changes: list[str] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"stage": "plan", "config": cfg.record(), "budget_s": budget_s}
    if changes:
        e["changes"] = changes
    return e
