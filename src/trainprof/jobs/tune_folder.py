"""The folder of a `trainprof tune` (the reference workload's, jobs/tune.py, or a program's,
jobs/tune_program.py): refused before anything runs when it is a wrong --out, prepared (or
resumed), cleared of the trial folders a `kill -9` left; and what the job returns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainprof import atomic, outdir
from trainprof.errors import TrainprofError, UsageError
from trainprof.recordtypes.tune import Tune


class LadderFailed(TrainprofError):
    """The ladder could not start (its baseline failed); nothing was decided."""


def check_out(job: Any) -> None:
    """Refuse a bad --out before the device is touched (a mistake costs nothing)."""
    if job.out is not None and not job.output.resume:
        outdir.check_out(job.out, force=job.output.force)


def prepare(job: Any) -> Path:
    """The tune's folder, created (or the one `--resume` continues), cleared of trial folders
    a tune killed with `kill -9` left."""
    if job.output.resume:
        if job.out is None or not (job.out / "journal.jsonl").exists():
            raise UsageError("--resume needs --out DIR holding the journal.jsonl of an earlier tune")
        out = job.out
    else:
        out = job.out if job.out is not None else outdir.fresh_dir("tune-{stamp}")
        if out.exists() and any(out.iterdir()) and not job.output.force:
            raise UsageError(f"--out {out}: exists and is not empty (use --resume to continue a tune there, "
                             "or --force to replace it)")
        if job.output.force:
            outdir.clear_for_force(out)
        out.mkdir(parents=True, exist_ok=True)
    atomic.clean_stale(out)
    return out


@dataclass(frozen=True)
class TuneResult:
    out: Path
    """the tune's folder"""
    doc: Tune
    """tune.json's record"""
    chart: Path | None
    """tune.png; None when no trial measured a speed-up"""
    report_note: str | None = None
    """the line saying which reports were written, None when none were"""
