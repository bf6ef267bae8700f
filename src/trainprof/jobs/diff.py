"""Two traces compared: `trainprof diff BASE NEW` and the study's diff stage (jobs/study.py).

Each trace is analysed with every operator and kernel kept (the comparison matches them by
name; only the printout is cut to --top), diagnosed (with its run's record when the study
has one), and the two records compared per step (analysis/job/diff.py): diff.json and
diff.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainprof.errors import UsageError
from trainprof.flags import option, section
from trainprof.options import OutputOptions, TopK
from trainprof.recordtypes.analysis import Rank
from trainprof.recordtypes.diff import Diff
from trainprof.recordtypes.run import RunRecord

ALL = 10**9  # keep every op/kernel for the comparison; only the printout is cut to --top


@dataclass(frozen=True)
class DiffJob:
    """`trainprof diff`'s configuration (its flags: trainprof/flags.py)."""

    base: str = option("", positional=True, metavar="BASE")
    """trace before (a file, or a run folder: its trace; rank 0's of several)"""
    new: str = option("", positional=True, metavar="NEW")
    """trace after (the same)"""
    top: TopK = section(TopK(), helps={"k": "rows per table"})
    """rows per table"""
    output: OutputOptions = section(OutputOptions(), flags=("out", "force", "json"), helps={
        "out": "folder for diff.json and diff.md; must not exist or be empty",
        "force": "replace an existing non-empty --out", "json": "print diff.json to stdout"})
    """where diff.json and diff.md go (None: printed only)"""


def single_trace(path: str) -> str:
    """The one trace `path` names: a file, or a run folder's (rank 0's of several)."""
    from trainprof.jobs.analyze import expand_paths
    from trainprof.jobs.run import folder_trace

    found = expand_paths([folder_trace(path)])
    if len(found) != 1:
        raise UsageError(f"{path}: diff compares single traces; this folder holds {len(found)}")
    return str(found[0])


def compare(base: str, new: str, top: int, runs: tuple[RunRecord | None, RunRecord | None] = (None, None)
            ) -> tuple[Diff, list[Rank]]:
    """The diff record of two trace files (`top` rows per table), and their two rank records,
    each diagnosed with its run's record where given (the findings are compared too)."""
    from trainprof.analysis.job.diff import diff_ranks
    from trainprof.jobs.analyze import add_findings, analyze_one

    ranks = []
    for f, run in zip((base, new), runs):
        ranks.append(add_findings(analyze_one(f, ALL), run))
    return diff_ranks(ranks[0], ranks[1], top), ranks


def write_diff(folder: Path, doc: Diff, unlike_steps: str | None = None) -> str:
    """diff.json and diff.md in `folder`; returns diff.json's text. `unlike_steps`: the
    sentence diff.md says when the two steps hold different numbers of tokens."""
    from trainprof import atomic, jsontext
    from trainprof.report.diff_terminal import diff_markdown

    text = jsontext.dumps(doc) + "\n"
    atomic.write_text(folder / "diff.json", text)
    atomic.write_text(folder / "diff.md", diff_markdown(doc, unlike_steps) + "\n")
    return text


def diff_traces(base: str, new: str, *, top: int = TopK.k, out: str | None = None, force: bool = False
                ) -> tuple[Diff, str]:
    """`trainprof diff`: the record and its JSON text; with `out`, the folder (diff.json,
    diff.md) appears only when complete."""
    from trainprof import atomic, jsontext, outdir

    folder = outdir.check_out(out, force=force) if out else None
    doc, _ = compare(single_trace(base), single_trace(new), top)
    if folder is None:
        return doc, jsontext.dumps(doc) + "\n"
    with atomic.staged_dir(folder, force=force) as stage:
        text = write_diff(stage, doc)
    return doc, text
