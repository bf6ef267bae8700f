"""`make_folder(*kinds)`: a tmp folder holding the saved records of those kinds."""

from __future__ import annotations

import pytest
from report_fixtures import folder


@pytest.fixture
def make_folder(tmp_path):  # noqa: ANN201
    return lambda *kinds, name="rep": folder(tmp_path, *kinds, name=name)
