from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

KEEP_BASETEMPS = 3

# One intra-op thread per process unless a test asks for more. The suite runs two workers on two
# cores and most tests train in child processes; at PyTorch's default (a thread per core) each
# child's OpenMP pool spin-waits against the other worker's, and two `trainprof memory` searches
# side by side took 64.9 s against 21.8 s with one thread each (same probes, same answer). Set at
# import, before any process of the suite imports torch; children inherit it. A test that is about
# threads sets its own (--threads, set_num_threads, or its own env: tests/unit/cli/test_analyze_blas.py).
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Tests that fork (trainprof.forked) need a process with no other thread: forked.can_fork refuses
# otherwise, and a call meant for a child then runs in the test process. An xdist worker keeps the
# threads: execnet's own (forked.can_fork sees every Python thread) and those earlier test files
# left (test_http_sources' servers, fsspec's IO loop), so these files run in a fresh pytest process of their own,
# tests/unit/test_fork_fresh.py, which sets FORK_TESTS_ENV.
FORK_TESTS_ENV = "TRAINPROF_FORK_TESTS"
FORK_TESTS = ["unit/test_forked.py", "unit/jobs/test_analyze_reports_beside.py", "unit/analysis/test_overlap_fork.py"]
collect_ignore = [] if os.environ.get(FORK_TESTS_ENV) == "1" else FORK_TESTS


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """A short base folder for tmp_path (/tmp/tp-XXXXXXXX/popen-gwN/...), unless --basetemp is given:
    pytest's own (/tmp/pytest-of-USER/pytest-N/popen-gwN/...) made printed paths long enough to
    wrap at 80 columns, and tests that look for a file name in the output then missed it. The
    last KEEP_BASETEMPS are kept for inspection, as pytest keeps its own. Workers get theirs from
    the controller (xdist passes basetemp/popen-gwN)."""
    if getattr(config, "workerinput", None) is not None or config.option.basetemp:
        return
    old = sorted(Path(tempfile.gettempdir()).glob("tp-*"), key=lambda p: p.stat().st_mtime)
    for p in old[:-KEEP_BASETEMPS] if len(old) > KEEP_BASETEMPS else []:
        if p.is_dir() and p.owner() == Path.home().owner() and not _in_use(p):
            shutil.rmtree(p, ignore_errors=True)
    config.option.basetemp = tempfile.mkdtemp(prefix="tp-")
    (Path(config.option.basetemp) / OWNER).write_text(str(os.getpid()))
    _compile_package()


def _compile_package() -> None:
    """Compile trainprof's modules to bytecode once, as `pip install` does for a user, before the
    suite starts its fresh processes (the CLI, the user's programs, ranks). With
    PYTHONDONTWRITEBYTECODE=1 (this sandbox's shell, and CI's) an editable install recompiled every
    imported module in every process: 0.13-0.30 CPU-s each for a process that trains (import
    trainprof.inject.agent, jobs.run, workload.trainer: 1.46-1.78 vs 1.31-1.48 user s, 4 pairs); the
    compile costs 0.40-0.45 CPU-s once (361 modules, a fresh clone, 3 runs). compileall writes the
    .pyc files whatever that variable says; a stale one is rewritten, a current one is left alone."""
    import compileall

    import trainprof

    compileall.compile_dir(str(Path(trainprof.__file__).parent), quiet=2)


OWNER = "session.pid"  # the pytest session that owns a base folder; another session never removes a live one


def _in_use(base: Path) -> bool:
    """A base folder whose session is still running (two suites at once on one machine: the second
    removed the first's folder under its running tests, and they failed with 'no such file')."""
    try:
        pid = int((base / OWNER).read_text())
    except (OSError, ValueError):
        import time

        return time.time() - base.stat().st_mtime < 6 * 3600  # an older layout's folder: kept while recent
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Keep the measured-CPU-peak cache out of the user's home (measured once per session)."""
    os.environ["TRAINPROF_CACHE_DIR"] = str(tmp_path_factory.mktemp("trainprof-cache"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any("gpu" in item.keywords for item in items):
        return  # nothing to skip: torch's import (~1.3 s) is not needed (the fork tests' own process)
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:  # pragma: no cover
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
