"""owned.py: --force removes what trainprof wrote (its manifests list it) and nothing else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainprof import atomic, jsonl, owned
from trainprof.errors import InputError, UsageError


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _study_like(tmp_path: Path) -> Path:
    """A folder written as a command goes (tracked), holding a staged sub-folder with its own
    manifest (as study's baseline/ run) and a sub-folder the command made (logs/)."""
    out = tmp_path / "study"
    out.mkdir()
    with owned.tracking(out):
        jsonl.append_jsonl(out / "journal.jsonl", {"stage": "plan"})
        jsonl.append_jsonl(out / "journal.jsonl", {"stage": "baseline"})  # listed once
        atomic.write_text(out / "logs" / "baseline.log", "ok\n")
        with atomic.staged_dir(out / "baseline") as stage:
            atomic.write_text(stage / "run.json", "{}")
            atomic.write_text(stage / "traces" / "rank0.json", "{}")
    return out


def test_tracked_and_staged_files_are_listed(tmp_path):
    out = _study_like(tmp_path)
    doc = json.loads((out / owned.NAME).read_text())
    # the study's own files and folders, and baseline/ (which lists its own files)
    assert doc["files"] == ["journal.jsonl", "logs/baseline.log"] and doc["dirs"] == ["baseline", "logs"]
    inner = json.loads((out / "baseline" / owned.NAME).read_text())
    assert inner["files"] == ["run.json", "traces/rank0.json"] and inner["dirs"] == ["traces"]


def test_remove_takes_exactly_what_was_listed(tmp_path):
    out = _study_like(tmp_path)
    owned.remove(out)
    assert out.is_dir() and _tree(out) == []


@pytest.mark.parametrize("plant", ["keep.txt", "logs/notes.txt", "baseline/traces/mine.json", "empty-dir/"])
def test_anything_unlisted_refuses_the_whole_removal(tmp_path, plant):
    out = _study_like(tmp_path)
    target = out / plant
    if plant.endswith("/"):
        target.mkdir()
    else:
        target.write_text("the user's")
    before = _tree(out)
    with pytest.raises(UsageError) as e:
        owned.remove(out)
    assert repr(plant.rstrip("/").split("/")[-1]) in str(e.value) or plant.rstrip("/") in str(e.value)
    assert "nothing was removed" in str(e.value)
    assert _tree(out) == before  # not one file gone


def test_no_manifest_owns_nothing(tmp_path):
    out = tmp_path / "o"
    (out / "sub").mkdir(parents=True)
    (out / "analysis.json").write_text("{}")  # looks like ours, but no manifest says so
    with pytest.raises(UsageError, match="'analysis.json'.*trainprof did not write"):
        owned.remove(out)
    assert _tree(out) == ["analysis.json", "sub"]


@pytest.mark.parametrize("entry", ["../outside.txt", "/etc/passwd", "a/../../outside.txt", ""])
def test_a_manifest_naming_paths_outside_its_folder_is_invalid(tmp_path, entry):
    out = tmp_path / "o"
    out.mkdir()
    (tmp_path / "outside.txt").write_text("x")
    (out / "a.json").write_text("{}")
    (out / owned.NAME).write_text(json.dumps({"schema": owned.SCHEMA, "files": ["a.json", entry], "dirs": []}))
    assert owned.read(out) is None  # an invalid manifest owns nothing ...
    with pytest.raises(UsageError):  # ... so --force refuses rather than guess
        owned.remove(out)
    assert (tmp_path / "outside.txt").exists() and (out / "a.json").exists()


def test_a_symlink_inside_refuses_even_when_listed(tmp_path):
    """trainprof writes no links: one inside --out (listed or not) is someone else's, and the
    folder it points to is never entered. (Before #45 a listed link was removed as a link.)"""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("x")
    out = tmp_path / "o"
    out.mkdir()
    os.symlink(elsewhere, out / "plots")
    owned.write(out, {"plots", "precious.txt"}, {"plots"})
    with pytest.raises(UsageError, match="'plots' \\(a symbolic link"):
        owned.remove(out)
    assert os.path.islink(out / "plots") and (elsewhere / "precious.txt").read_text() == "x"


def test_an_out_that_is_a_symlink_is_refused(tmp_path):
    real = _study_like(tmp_path)
    link = tmp_path / "link"
    os.symlink(real, link)
    before = _tree(real)
    with pytest.raises(UsageError, match="link: is a symbolic link"):
        owned.remove(link)
    with pytest.raises(UsageError, match="is a symbolic link"):
        owned.check_removable(link)
    assert _tree(real) == before


def test_an_earlier_output_nested_under_out_is_not_entered(tmp_path):
    """`analyze --out o/old` long ago, then `--out o --force`: o's manifest does not list old/,
    so old/ is not ours to remove here, though it holds a manifest of its own."""
    out = tmp_path / "o"
    with atomic.staged_dir(out) as stage:
        atomic.write_text(stage / "analysis.json", "{}")
    with atomic.staged_dir(out / "old") as stage:  # written after o: o's manifest does not list it
        atomic.write_text(stage / "analysis.json", "{}")
    before = _tree(out)
    with pytest.raises(UsageError, match="'old' \\(the output of another trainprof command"):
        owned.remove(out)
    assert _tree(out) == before


def test_remove_returns_what_it_removed(tmp_path):
    out = _study_like(tmp_path)
    removed = owned.remove(out)
    assert sorted(removed) == sorted([owned.NAME, "journal.jsonl", "logs/baseline.log", "logs", "baseline",
                                      f"baseline/{owned.NAME}", "baseline/run.json", "baseline/traces",
                                      "baseline/traces/rank0.json"])


@pytest.mark.parametrize("when", ["baseline/run.json", "baseline/traces/rank0.json", "logs/baseline.log"])
def test_a_folder_swapped_for_a_link_during_removal_is_not_followed(tmp_path, monkeypatch, when):
    """The race --force must survive: after the check, just before `when` is removed, its
    folder is renamed away and a link to the user's folder (holding files of the same names)
    put in its place. The user's files stay; what changed is named; nothing else was claimed."""
    out = _study_like(tmp_path)
    victim = tmp_path / "home"
    for rel in ("run.json", "traces/rank0.json", "baseline.log", "traces/x"):
        (victim / rel).parent.mkdir(parents=True, exist_ok=True)
        (victim / rel).write_text("the user's")
    swapped = []

    def swap(rel: str) -> None:
        if rel == when and not swapped:
            folder = out / rel.split("/")[0]
            folder.rename(tmp_path / "moved-away")
            os.symlink(victim, folder)
            swapped.append(rel)

    monkeypatch.setattr(owned, "before_remove", swap)
    with pytest.raises(InputError, match=f"'{when}'.*changed while they were being removed") as e:
        owned.remove(out)
    assert swapped and "removed" in str(e.value)
    assert sorted(p.relative_to(victim).as_posix() for p in victim.rglob("*") if p.is_file()) == \
        ["baseline.log", "run.json", "traces/rank0.json", "traces/x"]
    assert all((victim / f).read_text() == "the user's" for f in ("run.json", "traces/rank0.json", "baseline.log"))
    assert os.path.islink(out / when.split("/")[0])  # the link itself is left too: not ours


def test_a_journal_that_is_a_link_is_not_appended_through(tmp_path):
    """journal.jsonl is opened with O_NOFOLLOW: a link planted in its place (to ~/.bashrc, say)
    is one line, not a line appended to the file it points to."""
    victim = tmp_path / "bashrc"
    victim.write_text("the user's\n")
    out = tmp_path / "o"
    out.mkdir()
    os.symlink(victim, out / "journal.jsonl")
    with pytest.raises(InputError, match="journal.jsonl: cannot append"):
        jsonl.append_jsonl(out / "journal.jsonl", {"stage": "plan"})
    assert victim.read_text() == "the user's\n"


def test_replaceable_names_only_files_trainprof_wrote(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "report.html").write_text("the user's page")
    with pytest.raises(UsageError, match="report.html was not written by trainprof"):
        owned.check_replaceable(out, ["report.html", "report.md"])
    owned.write(out, {"report.html"}, set())
    owned.check_replaceable(out, ["report.html", "report.md"])  # listed now: may be replaced


@pytest.mark.parametrize("where", [".", "..", "home", "/"])
def test_out_is_never_the_cwd_an_ancestor_home_or_root(tmp_path, monkeypatch, where):
    cwd = tmp_path / "home" / "proj"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = {"home": str(tmp_path / "home"), "..": str(tmp_path)}.get(where, where)
    with pytest.raises(UsageError, match="is (the current folder|an ancestor|the home folder|a filesystem root)"):
        owned.check_place(path)
    owned.check_place(cwd / "out")  # a new folder inside is fine
