"""The data-loading fix reads the program's own DataLoader (issue #37: a program with 4 workers
was told to use workers)."""

from types import SimpleNamespace

from trainprof.diagnose.rules import _data_fix


def _run(**dl):  # noqa: ANN003, ANN202
    return SimpleNamespace(config={"data_loader": dl} if dl else {})


def test_a_loader_with_workers_is_not_told_to_use_workers():
    fix = _data_fix(_run(num_workers=4, pin_memory=True, persistent_workers=False))
    assert "already runs 4 workers with pinned memory" in fix and "num_workers=4" not in fix
    assert "persistent_workers=True" in fix and "pin_memory=True" not in fix


def test_no_workers_gets_the_workers_advice():
    assert _data_fix(_run(num_workers=0)).startswith("DataLoader(num_workers=4")
    assert _data_fix(_run()).startswith("DataLoader(num_workers=4") and _data_fix(None).startswith("DataLoader(")
