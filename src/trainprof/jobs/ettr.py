"""`trainprof ettr DIR` as a job: a run folder's journal read, its effective training time
ratio computed across restarts (analysis/run/ettr.py), and ettr.json written into the folder
(it joins the folder's manifest, so a later --force may replace it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainprof.errors import InputError
from trainprof.flags import option, section
from trainprof.options import OutputOptions
from trainprof.recordtypes.ettr import Ettr


@dataclass(frozen=True)
class EttrJob:
    """`trainprof ettr`'s configuration (its flags: trainprof/flags.py)."""

    run_dir: str = option("", positional=True, metavar="DIR")
    """a `trainprof run` output folder (holds journal.jsonl)"""
    output: OutputOptions = section(OutputOptions(), flags=("json",), helps={"json": "print ettr.json to stdout"})
    """what is printed (ettr.json is written into DIR either way)"""


def ettr_job(run_dir: str | Path) -> Ettr:
    """The ETTR record of the run in `run_dir`, written there as ettr.json."""
    from trainprof import atomic, jsontext, owned
    from trainprof.analysis.run.ettr import ettr
    from trainprof.collect.run_journal import NAME, load_events

    d = Path(run_dir)
    if not (d / NAME).exists():
        raise InputError(f"{d}: no {NAME} (a folder written by `trainprof run`)")
    events = load_events(d / NAME)
    if not events:
        raise InputError(f"{d / NAME}: no events")
    result = Ettr(**ettr(events))
    with owned.tracking(d):  # ettr.json joins the run folder's manifest (--force may replace it)
        atomic.write_text(d / "ettr.json", jsontext.dumps(result) + "\n")
    return result
