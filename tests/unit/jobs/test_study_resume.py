"""`study --resume` checks its configuration like `run --resume`: a configuration flag that
differs from the study's journal is refused with one line naming it (exit 2), unless
--resume-anyway; a flag left out keeps the journal's value. On a planted study whose stages
are all done, so nothing trains."""

from __future__ import annotations

import json

import pytest

from trainprof import jsonl
from trainprof.cli import main
from trainprof.jobs.study import STAGES, start
from trainprof.jobs.study_config import StudyConfig


@pytest.fixture
def done(tmp_path):
    out = tmp_path / "s"
    start(out, StudyConfig.from_record({"preset": "tiny", "steps": 30, "micro_batch": 16, "knobs": ["gc_disable"],
                                        "device": "cpu", "budget_minutes": 6}), resume=False)
    for s in STAGES:  # every stage finished: a resume has nothing to run
        extra = {"step_time_median_s": 0.2, "steps_run": 30} if s == "baseline" else {}
        jsonl.append_jsonl(out / "journal.jsonl", {"stage": s, "status": "done", "wall_s": 10.0, **extra,
                                                    "session_spent_s": 10.0 * (STAGES.index(s) + 1)})
    return out


@pytest.mark.parametrize("flags, named", [
    (["--preset", "gpt2-124m"], "--preset 'tiny' → 'gpt2-124m'"),
    (["--steps", "40"], "--steps 30 → 40"),
    (["--knobs", "compile,bf16"], "--knobs gc_disable → compile,bf16"),
    (["--micro-batch", "8"], "--micro-batch 16 → 8"),
    (["--device", "auto", "--seq-len", "64"], "--device 'cpu' → 'auto'; --seq-len None → 64"),
])
def test_a_changed_configuration_is_refused_with_one_line(done, capsys, flags, named):
    journal = (done / "journal.jsonl").read_text()
    assert main(["study", "--resume", "--out", str(done), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and named in err and "--resume-anyway" in err
    assert (done / "journal.jsonl").read_text() == journal  # nothing written


def test_same_values_or_none_are_accepted_and_resume_anyway_takes_the_new_ones(done, capsys):
    assert main(["study", "--resume", "--out", str(done), "--steps", "30", "--knobs", "gc_disable"]) == 0
    assert main(["study", "--resume", "--out", str(done)]) == 0
    assert main(["study", "--resume", "--resume-anyway", "--out", str(done), "--steps", "40"]) == 0
    study = json.loads((done / "study.json").read_text())
    assert study["config"]["steps"] == 40 and study["config_changes"] == ["--steps 30 → 40"]
    assert "continuing with --steps 30 → 40 (--resume-anyway)" in capsys.readouterr().err
    assert main(["study", "--resume-anyway", "--out", str(done / "x")]) == 2  # goes with --resume


def test_budget_on_resume_is_the_journal_s_less_what_was_spent(done, capsys):
    # the five stages journaled 10..50 s in one session: 50 s spent of 360
    assert main(["study", "--resume", "--out", str(done)]) == 0
    assert "0.8 of the 6 min budget spent before, 5.2 min left" in capsys.readouterr().err
    assert main(["study", "--resume", "--out", str(done), "--budget-minutes", "2"]) == 0
    assert "a new budget of 2 min from now, after 0.8 min spent before" in capsys.readouterr().err
    assert json.loads((done / "study.json").read_text())["budget_s"] == pytest.approx(50.0 + 120.0, abs=1.0)


def test_ctrl_c_says_how_to_continue_and_the_resume_does(tmp_path, monkeypatch, capsys):
    """Ctrl-C in the tune (issue #37 item 5.8): one line naming `trainprof study --resume
    --out DIR`, exit 130, no traceback; that command then finishes the study."""
    import functools

    from study_fakes import Clock, Machine

    import trainprof.jobs.study as study

    m = Machine(Clock(), step_s=1.0)

    def ctrl_c(*a, **k):
        raise KeyboardInterrupt

    real_start = study.start
    monkeypatch.setattr(study, "start", functools.partial(real_start, clock=m.clock, launch=m.launch,
                                                          trial_runner=ctrl_c, heartbeat_s=0))
    out = tmp_path / "s"
    argv = ["study", "--knobs", "gc_disable", "--verify-trials", "0", "--device", "cpu", "--budget-minutes", "6"]
    assert main([*argv, "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"trainprof: interrupted; the journal keeps the finished stages: continue with `trainprof study --resume "
        f"--out {out}` (add --budget-minutes M for M more minutes)")
    status = {e["stage"]: e["status"] for e in jsonl.read_jsonl(out / "journal.jsonl") if e.get("stage") in STAGES}
    assert status == {"baseline": "done", "tune": "failed"}
    monkeypatch.setattr(study, "start", functools.partial(real_start, clock=m.clock, launch=m.launch,
                                                          trial_runner=m.trial, heartbeat_s=0))
    assert main(["study", "--resume", "--out", str(out)]) == 0
    doc = json.loads((out / "study.json").read_text())
    assert [s["status"] for s in doc["stages"]] == ["done"] * 5


@pytest.mark.parametrize("entry, field, value, said", [
    (0, "config", "x", "config = 'x': expected an object"),
    (0, "config.steps", None, "steps"),
    (0, "config.knobs", [1], "knobs"),
    (0, "config.budget_minutes", "x", "budget_minutes"),
    (1, "budget_s", [1], "budget_s = [1]: expected a number"),
    (2, "step_time_median_s", None, "step_time_median_s = None"),
    (2, "wall_s", "x", "wall_s = 'x'"),
    (3, "wall_s", 1e400, "wall_s = inf"),
])
def test_a_mistyped_journal_field_is_one_line(done, capsys, entry, field, value, said):
    """Issue #45: a study journal edited by hand (63 of 96 mistyped fields tried, in a plan entry's
    config or a stage's numbers) ended in a TypeError traceback on --resume. Each is one line naming
    the journal and the field, exit 2, nothing written."""
    path = done / "journal.jsonl"
    lines = path.read_text().splitlines()
    e = json.loads(lines[entry])
    if field.startswith("config."):
        e["config"][field[7:]] = value
    else:
        e[field] = value
    lines[entry] = json.dumps(e)
    path.write_text("\n".join(lines) + "\n")
    before = path.read_text()
    assert main(["study", "--resume", "--out", str(done)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "journal.jsonl" in err and said in err, err
    assert path.read_text() == before
