"""The rules declared in code (diagnose/registry.py) and the rows of docs/rules.md are one set
of finding ids, each row naming the what-if scenario its rule declares (read, not run)."""

import re
from pathlib import Path

from trainprof.diagnose.catalogue import catalogue

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "rules.md"


def _doc_rows() -> dict[str, str]:
    """id -> its table row: a row opens with the id in backticks (`stragglers` / `late_ranks` share one)."""
    rows = {}
    for line in DOC.read_text("utf-8").splitlines():
        head = re.match(r"\| ((?:`[a-z_]+`(?: / )?)+)(?: \(job\))? \|", line)
        if head:
            rows.update({i: line for i in re.findall(r"`([a-z_]+)`", head.group(1))})
    return rows


def _written_in_code() -> set[str]:
    """Every finding id the diagnose package writes, as its source spells it."""
    ids = set()
    for f in (ROOT / "src" / "trainprof" / "diagnose").glob("*.py"):
        text = f.read_text("utf-8")
        ids |= set(re.findall(r'_make\(\s*"([a-z_]+)"', text)) | set(re.findall(r'id="([a-z_]+)"', text))
    return ids


def test_the_declared_rules_and_the_documented_rows_are_one_set():
    declared, rows = set(catalogue()), _doc_rows()
    assert {"data_loading", "stragglers", "late_ranks", "pipeline_bubble", "busy_but_slow"} <= declared  # all scopes
    assert sorted(declared - set(rows)) == []  # a rule without its row in docs/rules.md
    assert sorted(set(rows) - declared) == []  # a row for a rule the code no longer has


def test_every_id_the_code_writes_is_a_declared_rule():
    written = _written_in_code()
    assert {"busy_but_slow", "data_loading", "pipeline_bubble", "late_ranks"} <= written  # the patterns still find them
    assert sorted(written - set(catalogue())) == []


def test_each_row_names_the_scenario_its_rule_declares():
    rows = _doc_rows()
    declared = {i: r.scenario for i, r in catalogue().items() if r.scenario}
    assert len(declared) == 7  # data_loading, host_sync, exposed_communication, launch_bound, allocator, tiny, copies
    assert [i for i, s in declared.items() if f"`{s}`" not in rows[i]] == []


def test_every_rank_rule_takes_one_input_record():
    """One signature for the engine's loops (issue #44 item 2): `fn(x: RuleInput)`, so a rule
    cannot grow a keyword that only its tests pass (low_tensor_core's `peaks` did)."""
    import inspect

    loops = [r for r in catalogue().values() if r.scope in ("rank", "after")]
    assert len(loops) == 17
    odd = {r.id: list(inspect.signature(r.fn).parameters) for r in loops
           if list(inspect.signature(r.fn).parameters) != ["x"]}
    assert not odd, odd
