"""The dependency direction of ARCHITECTURE.md, checked by reading imports."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "src" / "trainprof"
PURE = ["analysis", "report", "trace", "diagnose", "hardware"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("pkg", PURE)
def test_pure_packages_touch_no_device(pkg):
    for f in (PKG / pkg).rglob("*.py"):
        bad = {m for m in _imports(f) if m.startswith(("trainprof.backends", "torch.cuda", "trainprof.cli",
                                                          "trainprof.workload", "trainprof.collect"))}
        assert not bad, f"{f.relative_to(PKG)} imports {bad}"


def test_nothing_imports_the_cli():
    for f in PKG.rglob("*.py"):
        if "cli" in f.relative_to(PKG).parts or f.name == "__main__.py":
            continue
        assert not any(m.startswith("trainprof.cli") for m in _imports(f)), f
