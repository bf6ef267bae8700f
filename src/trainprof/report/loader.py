"""Read the records a run/analysis/tune/memory/bench folder holds, for `trainprof report`.

One folder, no recursion: each known file is read if present and decoded into its Struct
(recordtypes/: run.json into RunRecord, study.json into Study, ...), types checked. A folder
with none of them, a file that is not valid JSON or a field of the wrong type is an
`InputError` naming the file and the field (exit code 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainprof.controls import visible
from trainprof.errors import InputError
from trainprof.recordtypes.analysis import Analysis
from trainprof.recordtypes.bench import Bench
from trainprof.recordtypes.diff import Diff
from trainprof.recordtypes.ettr import Ettr
from trainprof.recordtypes.memory import Memory
from trainprof.recordtypes.run import RunRecord
from trainprof.recordtypes.study import Study
from trainprof.recordtypes.tune import Tune
from trainprof.report.chart_registry import image_names

# file name -> the schema prefix it must carry.
KNOWN = {
    "run.json": "trainprof.run/",
    "analysis.json": "trainprof.analysis/",
    "analysis_optimised.json": "trainprof.analysis/",
    "tune.json": "trainprof.tune/",
    "diff.json": "trainprof.diff/",
    "memory.json": "trainprof.memory/",
    "bench.json": "trainprof.bench/",
    "ettr.json": "trainprof.ettr/",
}
# Pictures that other commands write beside the records; report.md links to them.
IMAGES = tuple(n for names in image_names().values() for n in names)  # the exported charts' files


@dataclass(frozen=True)
class Bundle:
    """What one folder holds: its records (recordtypes/) as Structs."""

    folder: Path
    name: str
    run: RunRecord | None = None
    analysis: Analysis | None = None
    optimised: Analysis | None = None  # analysis_optimised.json: the profile after the fixes
    tune: Tune | None = None
    diff: Diff | None = None
    memory: Memory | None = None
    bench: Bench | None = None
    ettr: Ettr | None = None
    study: Study | None = None  # study.json: a `trainprof study` folder (records in sub-folders)
    optimised_run: RunRecord | None = None  # the optimised configuration's run.json (a study)
    images: dict[str, Path] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    """attribute -> the file it was read from, relative to `folder` (what the reports' headers list)"""

    @property
    def files(self) -> list[str]:
        """The record files read, as paths relative to the folder: only files that are there
        (a study's optimised profile is `optimised/analysis.json`, not `analysis_optimised.json`)."""
        if self.sources:
            return list(self.sources.values())
        return [n for n, k in zip(KNOWN, _ATTRS) if getattr(self, k) is not None]


_ATTRS = ("run", "analysis", "optimised", "tune", "diff", "memory", "bench", "ettr")
# Bundle attribute -> its Struct (the one loader: recordtypes.base.load)
TYPED: dict[str, type] = {"study": Study, "run": RunRecord, "optimised_run": RunRecord, "ettr": Ettr, "diff": Diff,
                          "bench": Bench, "tune": Tune, "memory": Memory, "analysis": Analysis, "optimised": Analysis}


def _read(path: Path, schema: str, kind: str, text: str | None = None) -> Any:
    """One record: a regular file, bounded (bounded.py: size, nesting, strict JSON), an object
    with the right `schema` prefix, decoded into its Struct (recordtypes.base.load: a field of
    the wrong type is an InputError naming it). `text`: the file's text as this process just
    wrote it; decoded as the file would be, without reading it back through the bounded
    reader (a user's file needs that; our own text does not: 54 ms of the DDP trace's
    `analyze --out`, a fifth of what it costs beyond the analyses)."""
    from trainprof.recordtypes.base import decode, load, prefix_of

    assert prefix_of(TYPED[kind]) == schema, (kind, schema)
    rec = decode(path, text.encode("utf-8"), TYPED[kind]) if text is not None else load(path, TYPED[kind])
    return complete_run(rec) if isinstance(rec, RunRecord) else rec


def complete_run(run: RunRecord) -> RunRecord:
    """A run.json written before `summary.phase_split` existed gets it here, from its own
    steps by the function that writes it (analysis/run/step_split.phase_split), so every report
    reads the split's shares from the record and none computes them."""
    import msgspec

    from trainprof.recordtypes.base import known

    if known(run.summary.phase_split):
        return run
    from trainprof.analysis.run.step_split import measured, phase_split

    steps = measured(run.steps, run.summary.warmup_steps)
    summary = msgspec.structs.replace(run.summary, phase_split=phase_split(steps) if steps else {})
    return msgspec.structs.replace(run, summary=summary)


def load_folder(folder: str | Path, name: str | None = None, texts: dict[str, str] | None = None) -> Bundle:
    """Every known record in `folder`. `name` is the folder's name as shown in reports
    (a run writes its reports into a staging folder whose name is not the final one).
    `texts`: file name -> the text this process wrote there (see `_read`)."""
    texts = texts or {}
    folder = Path(folder)
    if not folder.exists():
        raise InputError(f"{folder}: no such folder")
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder (give the folder that holds run.json, analysis.json, ...)")
    if (folder / "study.json").is_file():
        return _load_study(folder, name)
    found = {attr: _read(folder / fname, schema, attr, texts.get(fname))
             for (fname, schema), attr in zip(KNOWN.items(), _ATTRS) if (folder / fname).is_file()}
    if not found:
        raise InputError(f"{folder}: no trainprof records here (looked for {', '.join(KNOWN)}, study.json)")
    images = {n: folder / n for n in IMAGES if (folder / n).is_file()}
    sources = {attr: fname for fname, attr in zip(KNOWN, _ATTRS) if attr in found}
    return Bundle(folder=folder, name=visible(name or folder.resolve().name), images=images, sources=sources, **found)


# study.json "records": Bundle attribute -> the schema its file must carry
STUDY_RECORDS = {"run": "trainprof.run/", "analysis": "trainprof.analysis/", "tune": "trainprof.tune/",
                 "optimised": "trainprof.analysis/", "optimised_run": "trainprof.run/", "diff": "trainprof.diff/"}


def _load_study(folder: Path, name: str | None) -> Bundle:
    """A `trainprof study` folder: study.json names the file of each record (jobs/study.py)."""
    study = _read(folder / "study.json", "trainprof.study/", "study")
    found: dict[str, Any] = {}
    sources = {"study": "study.json"}
    for attr, rel in study.records.items():
        if attr not in STUDY_RECORDS or not isinstance(rel, str) or ".." in Path(rel).parts:
            raise InputError(f"{folder / 'study.json'}: unknown or unsafe record entry {attr!r}: {rel!r}")
        path = folder / rel
        if path.is_file():
            found[attr] = _read(path, STUDY_RECORDS[attr], attr)
            sources[attr] = Path(rel).as_posix()
    images = {n: p for n in IMAGES for p in (folder / "baseline" / n, folder / "tune" / n, folder / n)
              if p.is_file()}
    return Bundle(folder=folder, name=visible(name or folder.resolve().name), images=images, study=study, sources=sources,
                  **found)
