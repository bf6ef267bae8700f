"""SOURCE expansion: files, folders, globs and fsspec URLs; URL traces fetched to a temp copy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainprof.errors import InputError
from trainprof.jobs.sources import expand, fetch, is_url


def _job(tmp_path: Path) -> Path:
    d = tmp_path / "job"
    d.mkdir()
    for name in ("rank1.json.gz", "rank0.json", "notes.txt", "rank2.json"):
        (d / name).write_bytes(b"{}")
    return d


def test_is_url():
    assert is_url("s3://bucket/job/") and is_url("memory://x/y.json") and is_url("file:///tmp/a.json")
    assert not is_url("/tmp/a.json") and not is_url("runs/a://b.json") and not is_url("C:/x.json")


def test_folder_glob_and_file_url_give_the_same_sorted_traces(tmp_path):
    d = _job(tmp_path)
    want = [str(d / n) for n in ("rank0.json", "rank1.json.gz", "rank2.json")]  # notes.txt is no trace
    assert expand([str(d)]) == want
    assert expand([str(d / "rank*")]) == want
    assert expand([f"file://{d}"]) == want
    assert expand([str(d / "rank[01]*")]) == want[:2]


def test_a_glob_matching_nothing_and_a_missing_path_are_input_errors(tmp_path):
    with pytest.raises(InputError, match=r"no trace file \(\*\.json, \*\.json\.gz\) matches"):
        expand([str(tmp_path / "nothing*.json")])
    with pytest.raises(InputError, match="no such file or folder"):
        expand([str(tmp_path / "missing.json")])


def test_memory_url_folder_and_fetch():
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe({"/job7/rank0.json": b'{"traceEvents": []}', "/job7/rank1.json": b"[]", "/job7/README": b"x"})
    try:
        found = expand(["memory://job7/"])
        assert found == ["memory:///job7/rank0.json", "memory:///job7/rank1.json"]
        assert expand(["memory://job7/rank1*"]) == found[1:]
        with fetch(found[0]) as local:
            assert Path(local).read_bytes() == b'{"traceEvents": []}' and local.endswith(".json")
        assert not os.path.exists(local)  # the temporary copy is gone
        with pytest.raises(InputError, match="no such file or folder"):
            expand(["memory://job8/"])
    finally:
        fs.rm("/job7", recursive=True)


def test_fetch_stops_at_the_trace_cap(monkeypatch):
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/big/rank0.json", b"[" + b" " * (3 << 20) + b"]")
    monkeypatch.setenv("TRAINPROF_MAX_TRACE_BYTES", str(1 << 20))
    try:
        with pytest.raises(InputError, match="memory:///big/rank0.json"):
            with fetch("memory:///big/rank0.json"):
                pass
    finally:
        fs.rm("/big", recursive=True)


def test_a_local_path_is_not_copied(tmp_path):
    p = tmp_path / "a.json"
    p.write_text("{}")
    with fetch(str(p)) as local:
        assert local == str(p)
