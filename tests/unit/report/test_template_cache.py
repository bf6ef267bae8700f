"""Issue #45: the compiled-template cache is a private folder; another user's cannot break `report`.

Jinja's default cache folder, `<tmp>/_jinja2-cache-<uid>`, raised RuntimeError (a traceback
from `trainprof report`) when another user had created it first; a folder open to others or a
link there must not be used either: compiled templates are code this process loads.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile

import pytest
from report_fixtures import DATA

from trainprof.cli import main
from trainprof.report import templating

UID = os.getuid()
OTHER = 65534  # nobody


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A temp dir and a home of the test's own, and the template environment built afresh."""
    tmp, home = tmp_path / "tmp", tmp_path / "home"
    tmp.mkdir()
    home.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    templating.env.cache_clear()
    yield tmp, home
    templating.env.cache_clear()


def _plant(folder, how: str) -> None:
    if how == "link":
        target = folder.parent / f"elsewhere-{folder.name}"
        target.mkdir()
        os.symlink(target, folder)
        return
    folder.mkdir()
    if how == "open":
        os.chmod(folder, 0o777)
    else:  # another user's
        os.chown(folder, OTHER, OTHER)


@pytest.mark.parametrize("how", ["other user", "open", "link"])
def test_a_planted_cache_folder_is_not_used_and_report_still_works(private_tmp, tmp_path, capsys, how):
    if how == "other user" and os.geteuid() != 0:
        pytest.skip("planting another user's folder needs root")
    tmp, home = private_tmp
    for name in (f"_jinja2-cache-{UID}", f"trainprof-templates-{UID}"):  # Jinja's default and ours
        _plant(tmp / name, how)
    d = tmp_path / "rep"
    shutil.copytree(DATA / "cpu_run", d)
    assert main(["report", str(d), "--format", "md,html"]) == 0, capsys.readouterr().err
    assert (d / "report.md").is_file() and (d / "report.html").is_file()
    used = templating.cache_dir()
    assert used == str(home / ".cache" / "trainprof" / "templates")
    st = os.lstat(used)
    assert st.st_uid == UID and stat.S_IMODE(st.st_mode) == 0o700
    assert os.listdir(used)  # the compiled templates went there, and nowhere planted
    for name in (f"_jinja2-cache-{UID}", f"trainprof-templates-{UID}"):
        p = tmp / name
        assert not os.path.isdir(p) or os.path.islink(p) or os.listdir(p) == []


def test_the_cache_folder_is_made_private(private_tmp):
    tmp, _ = private_tmp
    used = templating.cache_dir()
    assert used == str(tmp / f"trainprof-templates-{UID}")
    assert stat.S_IMODE(os.lstat(used).st_mode) == 0o700
