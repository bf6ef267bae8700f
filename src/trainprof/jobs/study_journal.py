"""A study's journal read back, each entry checked against the fields the study reads (issue
#45: a journal with a mistyped field, `"wall_s": "x"` or a `config` that is not an object,
was a TypeError/ValueError/ValidationError traceback on `study --resume`). A line torn by a
kill mid-write is still skipped (jsonl.read_jsonl); a whole entry that does not fit is one
line naming the file, the entry, the field and the value, exit code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

import msgspec
from msgspec import UNSET, UnsetType

from trainprof import jsonl
from trainprof.errors import InputError
from trainprof.jobs.study_config import StudyConfig
from trainprof.recordtypes.base import readable
from trainprof.recordtypes.study import Accuracy, Choice, Machine, NcuPlan, Speedup


class Entry(msgspec.Struct, forbid_unknown_fields=False):
    """The fields jobs/study.py, study_resume.py and study_budget.py read from an entry; the
    blocks study.json is built from are typed as study.json types them (absent, never null)."""

    stage: str
    status: Optional[str] = None
    wall_s: Optional[float] = None
    expected_s: Optional[float] = None
    session_spent_s: Optional[float] = None
    budget_s: Optional[float] = None
    spent_before_s: Optional[float] = None
    steps_run: Optional[int] = None
    step_time_median_s: Optional[float] = None
    reason: Optional[str] = None
    changes: Optional[list[str]] = None
    config: Union[dict[str, Any], UnsetType] = UNSET
    ncu: Union[NcuPlan, UnsetType] = UNSET
    choice: Union[Choice, UnsetType] = UNSET
    machine: Union[Machine, UnsetType] = UNSET
    accuracy: Union[Accuracy, UnsetType] = UNSET
    speedup: Union[Speedup, UnsetType] = UNSET


def _value(e: dict, err: str) -> str:
    """The value at the path msgspec names (`at `config.steps``), shown short."""
    import re

    m = re.search(r"at `\$\.([\w.]+)", err)
    v: Any = e
    for k in (m.group(1).split(".") if m else ()):
        v = v.get(k) if isinstance(v, dict) else None
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _no_gap(path: Path, kept: int) -> None:
    """A kill mid-write tears only the last line; an unreadable line before it is an edit (a
    `NaN`/`Infinity` number, a cut) and skipping it would re-run a finished stage without its
    record (a KeyError traceback before): refused with one line. Read again only on a mismatch."""
    with open(path, "rb") as f:
        lines = [ln for ln in f.read().splitlines() if ln.strip()]
    if len(lines) == kept:
        return
    bad = [n for n, ln in enumerate(lines, 1) if not _parses(ln)]
    if bad and bad != [len(lines)]:
        raise InputError(f"{path}: line {bad[0]} is not a JSON object trainprof wrote (only a torn last line is "
                         "skipped); move the journal away to start over")


def _parses(line: bytes) -> bool:
    import json

    try:
        return isinstance(json.loads(line, parse_constant=_refuse), dict)
    except ValueError:
        return False


def _refuse(name: str) -> None:
    raise ValueError(name)


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _field_type(key: str) -> Any:
    """The annotation of the StudyConfig field a flat record key fills (from_record's routing)."""
    import dataclasses
    import typing

    from trainprof.jobs.study_config import PROGRAM_RECORD, RECORD

    hints = typing.get_type_hints(StudyConfig)
    for section in ("train", "tune", "program"):
        cls = hints[section]
        if key in {f.name for f in dataclasses.fields(cls)} and (
                section == "train" or RECORD.get(key) == section or PROGRAM_RECORD.get(key) == section):
            return typing.get_type_hints(cls)[key]
    return hints.get(key) if RECORD.get(key) == "" or key == "command" else None


def checked_config(saved: dict[str, Any], where: str) -> StudyConfig:
    """StudyConfig from a plan entry's flat record, each value checked against the type of the
    StudyConfig field it fills (no second list of the fields to drift: `"steps": "x"` is one line
    naming the field, not a comparison's TypeError later). `where` starts the error line."""
    for key, value in saved.items():
        typ = _field_type(key)
        if typ is None:
            continue  # a key this version does not know (a newer journal's): from_record leaves it out
        try:
            msgspec.convert(value, typ, strict=True)
        except (msgspec.ValidationError, TypeError) as e:
            raise InputError(f"{where}: {str(e).split(' - at ')[0]} at `config.{key}` (value {_show(value)}); not a "
                             "journal trainprof wrote (move it away to start over)") from None
    try:
        return StudyConfig.from_record(saved)
    except (TypeError, ValueError) as e:  # a range a constructor checks (its ConfigError is an InputError)
        raise InputError(f"{where}: {str(e)[:200]}") from None


def read(path: Path) -> list[dict]:
    """The journal's entries (dicts, as the study uses them), each checked (module docstring)."""
    entries = jsonl.read_jsonl(path)
    _no_gap(path, len(entries))
    for i, e in enumerate(entries, 1):
        try:
            msgspec.convert(e, Entry)
        except msgspec.ValidationError as err:
            msg = str(err)
            raise InputError(f"{path}: entry {i} ({str(e.get('stage'))[:20]!r}): {readable(msg)} (value "
                             f"{_value(e, msg)}); not a journal trainprof wrote (move it away to start over)") from None
        if e.get("stage") == "plan":  # the plan's configuration, against StudyConfig's own field types
            checked_config(e["config"], f"{path}: entry {i} ('plan')")
    return entries
