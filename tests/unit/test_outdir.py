"""outdir.out_or_fresh: the one "--out checked, else a fresh runs/<name>" of run, profile, bench, memory."""

from __future__ import annotations

import pytest

from trainprof import outdir
from trainprof.errors import UsageError


def test_no_out_is_a_fresh_stamped_folder_under_runs_and_never_an_existing_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(outdir, "stamp", lambda: "20261129-010203")
    first = outdir.out_or_fresh(None, name="bench-matmul-{stamp}")
    assert first.as_posix() == "runs/bench-matmul-20261129-010203"
    first.mkdir(parents=True)
    assert outdir.out_or_fresh(None, name="bench-matmul-{stamp}").name == "bench-matmul-20261129-010203-2"
    assert outdir.out_or_fresh(None).as_posix() == "runs/20261129-010203"  # run's and profile's name


def test_an_out_is_checked_before_any_work(tmp_path):
    assert outdir.out_or_fresh(tmp_path / "new") == tmp_path / "new"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("user's")
    with pytest.raises(UsageError, match="--out"):
        outdir.out_or_fresh(tmp_path / "full")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UsageError, match="--out"):
        outdir.out_or_fresh(tmp_path / "afile" / "sub")
