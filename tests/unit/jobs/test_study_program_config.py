"""`trainprof study -- COMMAND`'s configuration (jobs/study_config.py): the command and the
program's options journaled beside the flags, restored on --resume, a changed command named
in the refusal; a preset study's record unchanged."""

from __future__ import annotations

import pytest

from trainprof.errors import ConfigError, UsageError
from trainprof.jobs.study_config import RECORD, StudyConfig
from trainprof.jobs.study_resume import differences
from trainprof.tune.config import ProgramTune, TuneConfig


def _program(*argv: str, **program) -> StudyConfig:
    return StudyConfig(command=("--", *argv), program=ProgramTune(**program),
                       tune=TuneConfig(knobs=("dataloader_workers",)))


def test_the_command_and_program_options_round_trip_through_the_journal():
    cfg = _program("python", "train.py", "--lr", "3e-4", arg_knob=("--batch=8,16",), warmup=4)
    rec = cfg.record()
    assert rec["command"] == ["python", "train.py", "--lr", "3e-4"] and rec["arg_knob"] == ["--batch=8,16"]
    assert rec["warmup"] == 4 and rec["knobs"] == ("dataloader_workers",)
    back = StudyConfig.from_record(rec)
    assert back.argv == cfg.argv and back.program == cfg.program and back.tune == cfg.tune


def test_a_preset_study_s_record_has_no_program_keys():
    assert list(StudyConfig().record()) == list(RECORD)


def test_a_changed_command_is_named_on_resume():
    saved = _program("python", "a.py").record()
    now = _program("python", "b.py")
    assert differences(saved, now, {"command"}) == ["the command python a.py → python b.py"]
    assert differences(saved, now, set()) == []  # not given: the journal's command


def test_reference_workload_flags_and_the_other_catalogue_are_refused_with_a_command():
    from dataclasses import replace

    base = StudyConfig()
    with pytest.raises(UsageError, match="--micro-batch"):
        StudyConfig(train=replace(base.train, micro_batch=4), command=("python", "a.py"))
    with pytest.raises(ConfigError, match="not a knob for a program"):
        StudyConfig(tune=TuneConfig(knobs=("activation_checkpointing",)), command=("python", "a.py"))
    with pytest.raises(UsageError, match="give its command after --"):
        StudyConfig(program=ProgramTune(arg_knob=("--batch=2,4",)))
