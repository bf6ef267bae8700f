"""Two runs or traces compared: `trainprof diff BASE NEW` and the study's diff stage (jobs/study.py).

A side is a run folder (`run`, `run --profile`, `profile`: its run.json, its trace if it kept
one, the findings its report lists) or one trace file. Traces are analysed with every operator
and kernel kept (the comparison matches them by name; only the printout is cut to --top) and
compared per step (analysis/job/diff.py); two run folders' measured steps are compared per
step, token or sample, with a noise test (analysis/run/compare.py), which gives the verdict.
Written: diff.json and diff.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainprof.errors import UsageError
from trainprof.flags import option, section
from trainprof.options import OutputOptions, TopK
from trainprof.recordtypes.analysis import Finding, Rank
from trainprof.recordtypes.diff import Diff
from trainprof.recordtypes.run import RunRecord

ALL = 10**9  # keep every op/kernel for the comparison; only the printout is cut to --top


@dataclass(frozen=True)
class DiffJob:
    """`trainprof diff`'s configuration (its flags: trainprof/flags.py)."""

    base: str = option("", positional=True, metavar="BASE")
    """before: a run folder (its run.json and trace; rank 0's of several) or a trace file"""
    new: str = option("", positional=True, metavar="NEW")
    """after (the same)"""
    top: TopK = section(TopK(), helps={"k": "rows per table"})
    """rows per table"""
    output: OutputOptions = section(OutputOptions(), flags=("out", "force", "json"), helps={
        "out": "folder for diff.json and diff.md; must not exist or be empty",
        "force": "replace an existing non-empty --out", "json": "print diff.json to stdout"})
    """where diff.json and diff.md go (None: printed only)"""


@dataclass(frozen=True)
class Input:
    """One side of `trainprof diff`: what its path holds."""

    path: str
    trace: str | None = None
    """the trace to compare (None: a run folder of run.json only)"""
    run: RunRecord | None = None
    findings: list[Finding] | None = None
    """the run folder's own findings (its analysis.json's rank 0, else its run.json's): the
    figures its report shows; None for a bare trace (diagnosed here)"""
    folder: str | None = None
    traces: int | None = None
    """trace files the run folder holds"""


def _folder_traces(folder: Path) -> int:
    """Trace files a run folder holds: trace.json.gz, or one per rank under traces/."""
    from trainprof.jobs.sources import TRACE_SUFFIXES

    ranks = folder / "traces"
    many = [f for f in ranks.iterdir() if f.is_file() and f.name.endswith(TRACE_SUFFIXES)] if ranks.is_dir() else []
    return int((folder / "trace.json.gz").is_file()) + len(many)


def _folder_findings(folder: Path, run: RunRecord) -> list[Finding]:
    """The findings the folder's report lists (report/findings_list.listed): analysis.json's
    first rank's, else run.json's (a run without a trace)."""
    from trainprof.recordtypes.analysis import Analysis
    from trainprof.recordtypes.base import load

    if (folder / "analysis.json").is_file():
        a = load(folder / "analysis.json", Analysis)
        if a.ranks:
            return list(a.ranks[0].findings or [])
    return list(run.findings or [])  # typed as run.json was read: a bad finding failed there, naming its field


def resolve(path: str) -> Input:
    """What `path` names: a run folder (run.json, its trace if it kept one, its findings), a
    run folder's trace.json.gz (the folder), or one trace file (a folder of exactly one)."""
    from trainprof.jobs.analyze import expand_paths
    from trainprof.jobs.run import folder_trace
    from trainprof.recordtypes.run import load_run

    p = Path(path)
    if p.name == "trace.json.gz" and (p.parent / "run.json").is_file():
        p = p.parent  # the folder's trace stands for the folder: its run.json has the measured steps
    if (p / "run.json").is_file():
        run = load_run(p / "run.json")
        trace = folder_trace(str(p))
        return Input(path=path, trace=trace if trace != str(p) else None, run=run,
                     findings=_folder_findings(p, run), folder=str(p), traces=_folder_traces(p))
    found = expand_paths([path])  # a missing path or an empty folder: one InputError line
    if len(found) != 1:
        names = ", ".join(Path(str(f)).name for f in found[:3]) + (", ..." if len(found) > 3 else "")
        raise UsageError(f"{path}: diff compares one trace per side; this folder holds {len(found)} trace files "
                         f"({names}): name one")
    return Input(path=path, trace=str(found[0]))


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


def diff_inputs(base: Input, new: Input, top: int) -> Diff:
    """The diff record of two sides: their traces compared (when both have one), their runs
    compared and tested against the noise (when both are run folders), the findings as each
    side's own analysis holds them."""
    import msgspec

    from trainprof.analysis.job.diff import diff_ranks, findings_delta, with_runs
    from trainprof.analysis.run.compare import compare_runs, load_of, verdict
    from trainprof.analysis.run.step_split import PHASE_LABEL
    from trainprof.diagnose.finding import Thresholds
    from trainprof.jobs.analyze import add_findings, analyze_one
    from trainprof.recordtypes.diff import Side, StepTime

    sides = (base, new)
    if not (base.trace and new.trace) and not (base.run and new.run):
        have = [f"{s.path} holds " + ("a trace" if s.trace else "run.json without a trace") for s in sides]
        raise UsageError(f"nothing to compare: {'; '.join(have)} (diff needs two traces or two run folders)")
    if base.trace and new.trace:
        ranks = []
        for s in sides:
            r = analyze_one(s.trace, ALL)
            ranks.append(msgspec.structs.replace(r, findings=s.findings) if s.findings is not None
                         else add_findings(r, s.run))
        doc = diff_ranks(ranks[0], ranks[1], top)
        held = [msgspec.structs.replace(d, folder=s.folder, traces=s.traces) for d, s in ((doc.base, base), (doc.new, new))]
        doc = msgspec.structs.replace(doc, base=held[0], new=held[1])
    else:  # two run folders, one without a trace: the runs and their findings only
        doc = Diff(base=Side(folder=base.folder, traces=base.traces), new=Side(folder=new.folder, traces=new.traces),
                   step_time_us=StepTime(), findings=findings_delta(base.findings or [], new.findings or []))
    if not (base.run and new.run):
        return with_runs(doc, None, None, PHASE_LABEL)
    th = Thresholds()
    load = tuple(load_of(s.run, th.contention_others_cpu_pct, th.contention_steal_pct, th.contention_load_per_core)
                 for s in sides)
    runs = compare_runs(base.run, new.run, (str(Path(base.folder) / "run.json"), str(Path(new.folder) / "run.json")),
                        load)
    return with_runs(doc, runs, verdict(base.run, new.run, load), PHASE_LABEL)


def diff_traces(base: str, new: str, *, top: int = TopK.k, out: str | None = None, force: bool = False
                ) -> tuple[Diff, str]:
    """`trainprof diff`: the record and its JSON text; with `out`, the folder (diff.json,
    diff.md) appears only when complete."""
    from trainprof import atomic, jsontext, outdir

    folder = outdir.check_out(out, force=force) if out else None
    doc = diff_inputs(resolve(base), resolve(new), top)
    if folder is None:
        return doc, jsontext.dumps(doc) + "\n"
    with atomic.staged_dir(folder, force=force) as stage:
        text = write_diff(stage, doc)
    return doc, text
