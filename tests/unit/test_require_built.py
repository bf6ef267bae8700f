"""tests/extensions.require_built: a missing extension fails where a compiler is, skips where none is."""

import pytest

from tests import extensions


def test_present_is_returned():
    assert extensions.require_built(pytest, "x") is pytest


def test_missing_with_a_compiler_fails(monkeypatch):
    monkeypatch.setattr(extensions.shutil, "which", lambda name: "/usr/bin/" + name)
    with pytest.raises(pytest.fail.Exception, match="was not built although a C compiler is here"):
        extensions.require_built(None, "pkg._ext")


def test_missing_without_a_compiler_skips(monkeypatch):
    monkeypatch.setattr(extensions.shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match="no C compiler"):
        extensions.require_built(None, "pkg._ext")
