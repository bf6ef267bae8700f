"""The optional C extensions in tests: present, or a clear reason why not."""

from __future__ import annotations

import shutil

import pytest


def require_built(module, name: str):
    """`module` (the extension, None when it did not import) for a test module that needs it.
    Where a C compiler is here the install must have built it (a silent build failure would
    leave every user on the slow path): its absence fails; without a compiler the module skips."""
    if module is not None:
        return module
    if shutil.which("cc") or shutil.which("gcc"):
        pytest.fail(f"{name} was not built although a C compiler is here: reinstall (pip install -e .) "
                    "and read the build log", pytrace=False)
    pytest.skip(f"no C compiler: the optional {name} is not built", allow_module_level=True)
