"""tune.json byte for byte as the ladder wrote it when its trials, tolerance and verification were
dicts (issue #44 item 3): tests/data/tune_ladder holds three tunes written by trainprof at 3cf11b9
with scripted runners (journal.jsonl, tune.json, the terminal's ladder at 100 columns). Each
journal is replayed here through today's ladder (every trial comes from it: the runner is never
called), and the record, its terminal text and the file read back must be those bytes."""

from __future__ import annotations

import dataclasses
import io
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from trainprof import jsontext
from trainprof.recordtypes.base import load
from trainprof.recordtypes.tune import Tune
from trainprof.report.tune_terminal import print_ladder
from trainprof.tune import Knob, LadderConfig, run_ladder
from trainprof.tune.journal import Journal
from trainprof.tune.record import tune_document
from trainprof.tune.reference import sparse
from trainprof.workload.config import TrainConfig

DATA = Path(__file__).resolve().parents[2] / "data" / "tune_ladder"
# the scripted tunes' baseline and knobs, as they were written
BASE = TrainConfig(preset="tiny", device="cpu", micro_batch=4, seq_len=32, dtype="fp32", seed=1).resolved()


def knob(name: str, **set_) -> Knob:
    return Knob(name, name + " desc", lambda c, d: dataclasses.replace(c, **set_), same_math=True, cost="c " + name)


FIVE = (knob("fast", compile=True), knob("slow", pad_vocab=True), knob("wrong_lr", gc_disable=True),
        knob("tiny_gain", non_blocking=True), knob("fast2", tf32=True))


def never(cfg, stop_at=None):  # noqa: ANN001, ANN201 - a runner: every trial must come from the journal
    raise AssertionError(f"ran a trial the journal holds: {cfg}")


def _terminal(doc: Tune) -> str:
    buf = io.StringIO()
    print_ladder(doc, Console(file=buf, width=100, color_system=None))
    return buf.getvalue()


@pytest.mark.parametrize("name, knobs", [("preset_mixed", FIVE), ("preset_unstable", FIVE[:1])])
def test_a_replayed_preset_tune_writes_the_bytes_it_wrote(tmp_path, name, knobs):
    shutil.copy(DATA / name / "journal.jsonl", tmp_path / "journal.jsonl")
    r = run_ladder(never, knobs, BASE, LadderConfig(verify_trials=3), Journal(tmp_path / "journal.jsonl"))
    doc = tune_document(sparse(BASE), r)
    assert jsontext.dumps(doc) + "\n" == (DATA / name / "tune.json").read_text()
    assert _terminal(doc) == (DATA / name / "terminal.txt").read_text()
    if name == "preset_unstable":  # the planted noise: baseline re-runs 4.7x slower than the first
        assert doc.best.verdict == "unstable machine" and doc.best.unconfirmed.knobs == ["fast"]


def test_a_replayed_program_tune_writes_the_bytes_it_wrote(tmp_path):
    """A program's ladder (ProgramGuard's tolerance, a flag of the user's that changes what is
    learned and then is the trajectory the others repeat, patches, the `program` block)."""
    from trainprof.jobs.tune_config import TuneJob
    from trainprof.jobs.tune_program import climb_program
    from trainprof.options import OutputOptions
    from trainprof.tune.config import TuneConfig

    shutil.copy(DATA / "program" / "journal.jsonl", tmp_path / "journal.jsonl")
    argv = ["python", "train.py", "--batch-size", "32"]
    job = TuneJob(tune=TuneConfig(verify_trials=2), command=("--", *argv), output=OutputOptions(out=str(tmp_path)),
                  program=dataclasses.replace(TuneJob().program, arg_knob=("--batch-size=64,128",)))
    doc, _ = climb_program(job, argv, tmp_path, runner=never, clock=lambda: 0.0)
    assert (tmp_path / "tune.json").read_text() == (DATA / "program" / "tune.json").read_text()
    assert _terminal(doc) == (DATA / "program" / "terminal.txt").read_text()
    assert doc.trials[2].loss_reference == "--batch-size=64" and doc.tolerance.rule.startswith("the two baseline")


@pytest.mark.parametrize("name", ["preset_mixed", "preset_unstable", "program"])
def test_the_old_files_read_back_to_their_bytes(name):
    text = (DATA / name / "tune.json").read_text()
    assert jsontext.dumps(load(DATA / name / "tune.json", Tune)) + "\n" == text
    assert Journal(DATA / name / "journal.jsonl").entries  # every line passes the journal's check
