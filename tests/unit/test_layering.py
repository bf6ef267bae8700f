"""The dependency direction of ARCHITECTURE.md, checked by reading imports.

Every top-level module and package of trainprof has a layer; a module may import its own
unit and units of lower layers only, so no import runs back up (and there is no cycle
between units). analysis/, trace/, diagnose/, report/ and hardware/ are pure: no torch, no
device code (they run where the records are read, often without torch's CUDA build).
"""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "src" / "trainprof"

LAYER = {
    # foundations: no trainprof imports beyond each other
    "errors": 0, "bounded": 1, "flags": 1, "background": 1, "owned": 1, "userregex": 1, "controls": 1, "atomic": 2, "records": 2, "hardware": 2,
    # the saved records as Structs (msgspec) and their one loader
    "recordtypes": 2,
    # reading and judging records: pure
    "trace": 3, "backends": 3, "analysis": 4, "diagnose": 5, "report": 6,
    # measuring and training (torch lives from here up)
    "collect": 7, "workload": 8, "tune": 9, "bench": 9, "integrations": 9,
    # `trainprof profile`'s agent, loaded into the user's program (it measures with collect/ and
    # reads batches as integrations/ do)
    "inject": 10,
    # orchestration, then the commands
    "jobs": 11, "cli": 12,
    # the package's lazy public API and `python -m trainprof`
    "__init__": 13, "__main__": 13,
}
PURE = ["analysis", "report", "trace", "diagnose", "hardware", "recordtypes"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _unit(path: Path) -> str:
    rel = path.relative_to(PKG).parts
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


def _files():
    return sorted(PKG.rglob("*.py"))


def test_every_top_level_unit_has_a_layer():
    units = {_unit(f) for f in _files()}
    assert units - set(LAYER) == set(), "place the new module in LAYER"


def test_imports_only_go_down():
    upward = []
    for f in _files():
        u = _unit(f)
        for m in _imports(f):
            if m.startswith("trainprof."):
                target = m.split(".")[1]
                if target != u and LAYER.get(target, 99) >= LAYER[u]:
                    upward.append(f"{f.relative_to(PKG)} imports {m}")
    assert upward == []


@pytest.mark.parametrize("pkg", PURE)
def test_pure_packages_touch_no_device_and_no_torch(pkg):
    for f in (PKG / pkg).rglob("*.py"):
        bad = {m for m in _imports(f) if m == "torch" or m.startswith(("torch.", "trainprof.backends", "trainprof.cli",
                                                                       "trainprof.workload", "trainprof.collect",
                                                                       "trainprof.jobs"))}
        assert not bad, f"{f.relative_to(PKG)} imports {bad}"


def test_nothing_imports_the_cli():
    for f in PKG.rglob("*.py"):
        if "cli" in f.relative_to(PKG).parts or f.name == "__main__.py":
            continue
        assert not any(m.startswith("trainprof.cli") for m in _imports(f)), f


def test_the_check_sees_an_upward_import(tmp_path):
    # the rule is not vacuous: an analysis module importing the trainer would be caught
    f = tmp_path / "x.py"
    f.write_text("from trainprof.workload.trainer import train\n")
    assert LAYER["workload"] >= LAYER["analysis"] and "trainprof.workload.trainer" in _imports(f)


def test_no_subcommand_imports_another():
    # shared work lives in jobs/ or report/ (memray's commands: one module per subcommand)
    for f in (PKG / "cli").glob("*.py"):
        if f.name == "__init__.py":
            continue
        others = {m for m in _imports(f) if m.startswith("trainprof.cli") and m != "trainprof.cli"}
        assert not others, f"{f.name} imports {others}"


def test_cuda_is_touched_only_in_backends():
    # everything else, bench/ and integrations/ included, reaches CUDA through backends/
    # (backends/cuda.py for timing, backends/cuda_state.py for process-wide state)
    for f in PKG.rglob("*.py"):
        if _unit(f) == "backends":
            continue
        tree = ast.parse(f.read_text("utf-8"))
        calls = {ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                 and ast.unparse(n).startswith(("torch.cuda.", "torch.backends.cuda", "torch.backends.cudnn"))}
        assert not calls, f"{f.relative_to(PKG)} uses {sorted(calls)[:3]}"
