"""A study journal with a mistyped field (issue #45, item 6: TypeError/ValueError/ValidationError
tracebacks on `study --resume`) is one line naming the file, the entry, the field and the
value, exit 2; a torn line is still skipped. On a planted study whose stages are all done (the
fixture of test_study_resume.py), so nothing trains."""

from __future__ import annotations

import json

import pytest

from trainprof import jsonl
from trainprof.cli import main
from trainprof.jobs import study_journal
from trainprof.jobs.study import STAGES, start
from trainprof.jobs.study_config import StudyConfig


@pytest.fixture
def done(tmp_path):
    """A planted study whose stages are all done (as in test_study_resume.py)."""
    out = tmp_path / "s"
    start(out, StudyConfig.from_record({"preset": "tiny", "steps": 30, "device": "cpu", "budget_minutes": 6}),
          resume=False)
    for s in STAGES:
        extra = {"step_time_median_s": 0.2, "steps_run": 30} if s == "baseline" else {}
        jsonl.append_jsonl(out / "journal.jsonl", {"stage": s, "status": "done", "wall_s": 10.0, **extra,
                                                    "session_spent_s": 10.0 * (STAGES.index(s) + 1)})
    return out


def _edit(out, stage, **fields):
    p = out / "journal.jsonl"
    lines = [json.loads(s) for s in p.read_text().splitlines()]
    for e in lines:
        if e.get("stage") == stage:
            e.update(fields)
    p.write_text("".join(json.dumps(e) + "\n" for e in lines))


@pytest.mark.parametrize("stage, fields, words", [
    ("baseline", {"wall_s": "x"}, "wall_s"),
    ("baseline", {"session_spent_s": [1]}, "session_spent_s"),
    ("baseline", {"steps_run": 1.5}, "steps_run"),
    ("session", {"budget_s": "lots"}, "budget_s"),
    ("plan", {"config": [1, 2]}, "config"),
    ("plan", {"config": {"steps": "thirty", "preset": "tiny"}}, "config.steps"),
    ("plan", {"changes": "--steps"}, "changes"),
    ("diff", {"speedup": None}, "speedup"),
    ("baseline", {"reason": {"a": 1}}, "reason"),
])
def test_a_mistyped_field_is_one_line_naming_it(done, capsys, stage, fields, words):
    _edit(done, stage, **fields)
    assert main(["study", "--resume", "--out", str(done)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and str(done / "journal.jsonl") in err, err
    assert f"at `{words}`" in err and "entry " in err and "(value " in err, err


def test_the_planted_journal_reads_and_a_torn_line_is_skipped(done):
    p = done / "journal.jsonl"
    n = len(study_journal.read(p))
    with open(p, "a") as f:
        f.write('{"stage": "diff", "wall_s": "x')  # torn mid-write: skipped, not refused
    assert len(study_journal.read(p)) == n
