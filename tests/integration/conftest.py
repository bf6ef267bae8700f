"""Shared by the integration tests: each shipped trace analysed once per session."""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Analyzed:
    out: Path  # the --out folder: analysis.json
    stdout: str  # what the command printed (the terminal report, 250 columns wide)
    shown: list  # the figures the terminal report showed (report/figures.py)


@contextlib.contextmanager
def _columns(n: int):  # noqa: ANN202
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(n)  # rich reads it: tables wide enough that no cell wraps a figure
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


@pytest.fixture(scope="session")
def analyzed(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """`trainprof analyze PATH --out DIR --top 5 --jobs 1 --no-report`, once per PATH for every
    test that reads it (test_cli_analyze's invariants, test_report_consistency's figures)."""
    from trainprof.cli import main
    from trainprof.report import figures

    cache: dict[Path, Analyzed] = {}

    def run(path: Path) -> Analyzed:
        if path not in cache:
            out = tmp_path_factory.mktemp("analyzed") / "a"
            buf = io.StringIO()
            with figures.capture() as shown, contextlib.redirect_stdout(buf), _columns(250):
                rc = main(["analyze", str(path), "--out", str(out), "--top", "5", "--jobs", "1", "--no-report"])
            assert rc == 0, buf.getvalue()[-2000:]
            cache[path] = Analyzed(out, buf.getvalue(), list(shown))
        return cache[path]

    return run
