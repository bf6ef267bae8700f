"""Nothing in src/ unpickles: a shared checkpoint, record or trace must never run code (issue #33).

Read from the syntax tree, so a docstring that explains the danger is not a call: every
`torch.load` passes `weights_only=True`, no keyword says `weights_only=False` or
`allow_pickle=True`, and no pickle-family module's `load`/`loads`/`Unpickler` is called.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "trainprof"
PICKLERS = {"pickle", "cPickle", "_pickle", "cloudpickle", "dill", "joblib", "shelve", "marshal"}


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def unpickling_calls(tree: ast.AST) -> list[tuple[int, str]]:
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PICKLERS:
            names = {a.name for a in node.names}
            if names & {"load", "loads", "Unpickler", "open"}:
                bad.append((node.lineno, f"from {node.module} import {', '.join(sorted(names))}"))
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        for key, unsafe in (("weights_only", False), ("allow_pickle", True)):
            v = kw.get(key)
            if isinstance(v, ast.Constant) and v.value is unsafe:
                bad.append((node.lineno, f"{name}({key}={unsafe})"))
        head, _, last = name.rpartition(".")
        if head.split(".")[0] in PICKLERS and last in ("load", "loads", "Unpickler", "open"):
            bad.append((node.lineno, name))
        w = kw.get("weights_only")
        if name.endswith("torch.load") and not (isinstance(w, ast.Constant) and w.value is True):
            bad.append((node.lineno, f"{name} without weights_only=True"))
    return bad


def test_src_never_unpickles():
    found = [f"{py.relative_to(SRC)}:{line} {what}" for py in sorted(SRC.rglob("*.py"))
             for line, what in unpickling_calls(ast.parse(py.read_text(encoding="utf-8")))]
    assert not found, found


def test_the_check_sees_each_form():
    # each line below is one way to run code from a file; the docstring is not a call
    planted = '''
"""torch.load(weights_only=False) is dangerous"""
import pickle, torch, numpy as np
from dill import loads
torch.load(f)
torch.load(f, weights_only=False)
pickle.loads(b)
np.load(f, allow_pickle=True)
torch.load(f, weights_only=True)
'''
    found = [what for _, what in unpickling_calls(ast.parse(planted))]
    assert found == ["from dill import loads", "torch.load without weights_only=True",
                     "torch.load(weights_only=False)", "torch.load without weights_only=True", "pickle.loads",
                     "np.load(allow_pickle=True)"], found
