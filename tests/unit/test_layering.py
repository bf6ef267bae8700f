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
    "errors": 0, "bounded": 1, "flags": 1, "background": 1, "owned": 1, "userregex": 1, "controls": 1, "jsontext": 1,
    "ranking": 1,  # the one ranking key of findings (analysis/, diagnose/ and report/ import it)
    "lowpriority": 1,  # the OS scheduling call trainprof's own work beside a running program makes
    "namematch": 1,  # the patterns run on trace names (RE2), used from hardware/ up
    # one word for each thing (matmul ops, collective names, idle causes, temporal parts): above
    # namematch (its patterns), below every reader, the records included (issue #44 item 1)
    "vocab": 1.5,
    "parentdeath": 1,  # a child that dies with its parent (trials, the forked graph work)
    "forked": 1.5,  # one call in a forked child (background's thread where no fork is safe; jsontext's numbers)
    "options": 2,  # the options every command shares (OutputOptions, TopK), declared with flags.py
    "knobs": 2,  # the knobs a tune trial turns in a program: built by tune/, applied by inject/
    # writing files: atomic files and folders, then the journals and output folders built on them
    "atomic": 2, "jsonl": 3, "outdir": 3,
    "hardware": 2,
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


# The package's own constant, set as trainprof/__init__ runs and before any command's module is
# imported: `from trainprof import __version__` reads no layer above the importer.
ROOT_CONSTANTS = {"__version__"}


def _is_module(dotted: str, pkg: Path = PKG) -> bool:
    """`trainprof.a.b` is a .py file or a package under `pkg` (whose folder is named trainprof)."""
    rel = pkg.joinpath(*dotted.split(".")[1:])
    return rel.with_suffix(".py").is_file() or (rel / "__init__.py").is_file()


def _imports(path: Path, pkg: Path = PKG) -> set[str]:
    """Every module `path` imports, as a dotted name: `import trainprof.a.b as c` is trainprof.a.b;
    `from trainprof.a import b` is trainprof.a and, when b is a module, trainprof.a.b; a name
    `from trainprof import X` takes from the package itself (not a module) is trainprof.__init__."""
    tree = ast.parse(path.read_text("utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {"trainprof.__init__" if a.name == "trainprof" else a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: from the file's own package, `level - 1` folders up
                parts = path.relative_to(pkg.parent).parts
                module = ".".join([*parts[:len(parts) - node.level], *([module] if module else [])])
            names.add(module)
            for a in node.names:
                if _is_module(f"{module}.{a.name}", pkg):
                    names.add(f"{module}.{a.name}")
                elif module == "trainprof" and a.name not in ROOT_CONSTANTS:
                    names.add("trainprof.__init__")
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


def test_the_check_sees_a_module_imported_through_its_package(tmp_path):
    # `from trainprof import cli`, `import trainprof.cli.x as y`, a relative import, a name from the
    # package's lazy API: each names the module it runs (the first form was once unseen)
    pkg = tmp_path / "trainprof"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "analysis" / "run").mkdir(parents=True)
    for f in ("__init__.py", "workload.py", "cli/__init__.py", "cli/run.py", "analysis/__init__.py",
              "analysis/run/__init__.py", "analysis/run/a.py", "analysis/run/b.py"):
        (pkg / f).write_text("")
    f = pkg / "analysis" / "run" / "a.py"
    f.write_text("from trainprof import workload, __version__\nimport trainprof.cli.run as r\nfrom . import b\n"
                 "from .. import run\nfrom trainprof import Monitor\n")
    assert _imports(f, pkg) == {"trainprof", "trainprof.workload", "trainprof.cli.run", "trainprof.analysis.run",
                                "trainprof.analysis.run.b", "trainprof.analysis", "trainprof.__init__"}


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


def test_the_cli_reaches_analysis_trace_and_diagnose_only_through_jobs_and_report():
    # cli/ parses, calls one job, prints (issue #30): the work and its reads of traces live in jobs/
    bad = []
    for f in (PKG / "cli").glob("*.py"):
        bad += [f"cli/{f.name} imports {m}" for m in sorted(_imports(f))
                if m.startswith(("trainprof.analysis", "trainprof.trace", "trainprof.diagnose"))]
    assert bad == []


# The import graph for the cycle check. A node is a module: each .py file (a package is its
# __init__.py) and each C extension (its .c source: trainprof.trace._scan). An edge is every
# import statement that can run: at module level, inside a function or method (a deferred
# import is a module-level one postponed to dodge the import-order error; the two modules
# still know each other: report/markdown.py ⇄ report/study_md.py were function-local), in
# try/except, and under `if TYPE_CHECKING:` (it never runs, but the two modules still know each
# other: a type the caller's module defines and the callee names belongs in a module both import,
# or a Protocol, as inject/agent_view.py for inject/part.py and knobs.py). Left out: the parent
# packages an import runs implicitly (else every package whose __init__ re-exports its
# submodules would be a cycle with each of them). `from P import x` is an edge to P.x when
# that is a module, else to P.


def _module_names(root: Path) -> dict[str, Path]:
    out = {}
    for f in list(root.rglob("*.py")) + list(root.rglob("*.c")):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def _all_imports(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(module, names) of every import statement, `if TYPE_CHECKING:` blocks included."""
    tree = ast.parse(path.read_text("utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, tuple(a.name for a in node.names)))
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    mods = _module_names(root)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        if f.suffix != ".py":
            continue
        for target, names in _all_imports(f):
            hits = {f"{target}.{n}" for n in names if f"{target}.{n}" in mods}
            if len(hits) < len(names) or not names:  # names defined in `target` itself
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target:
                    hits.add(target)
            graph[m] |= hits - {m}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


def test_no_two_modules_import_each_other_directly_or_in_a_loop():
    assert cycles(import_graph(PKG)) == []


def test_the_cycle_check_sees_a_function_local_loop(tmp_path):
    # the check is not vacuous: a ⇄ b through a function-local import, a loop of three, and
    # v ⇄ w whose one side is a type-only import
    pkg = tmp_path / "trainprof"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from trainprof.sub.a import f\n")  # a re-export: no cycle
    (pkg / "sub" / "a.py").write_text("def f():\n    from trainprof.sub import b\n    return b\n")
    (pkg / "sub" / "b.py").write_text("from trainprof.sub.a import f\n")
    (pkg / "x.py").write_text("from trainprof import y\n")
    (pkg / "y.py").write_text("import trainprof.z\n")
    (pkg / "z.py").write_text("from typing import TYPE_CHECKING\nfrom trainprof.x import *\n")
    (pkg / "w.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from trainprof import v\n")
    (pkg / "v.py").write_text("def f():\n    from trainprof.w import g\n")
    assert cycles(import_graph(pkg)) == [["trainprof.sub.a", "trainprof.sub.b"], ["trainprof.v", "trainprof.w"],
                                         ["trainprof.x", "trainprof.y", "trainprof.z"]]


MAX_FOLDER_SHARE_PCT = 20  # issue #30: analysis/ was one room of 21% of the source


def test_no_folder_holds_over_a_fifth_of_the_source():
    # a folder's own .py files (its sub-folders count on their own), in physical lines
    lines: dict[str, int] = {}
    for f in PKG.rglob("*.py"):
        folder = str(f.parent.relative_to(PKG.parent))
        lines[folder] = lines.get(folder, 0) + len(f.read_text("utf-8").splitlines())
    total = sum(lines.values())
    big = {d: round(100 * n / total, 1) for d, n in lines.items() if 100 * n > MAX_FOLDER_SHARE_PCT * total}
    assert big == {}


# analysis/'s folders (their __init__ docstrings): timeline/ is the floor, graph/, cost/ and
# job/ build on it and not on each other, run/ stands alone, plan/ uses cost/'s FLOPs; analysis/trace_report.py
# composes them
ANALYSIS_FOLDERS = {"timeline": set(), "graph": {"timeline"}, "cost": {"timeline"}, "job": {"timeline"},
                    "run": set(), "plan": {"cost"}}


def test_analysis_folders_import_as_their_docstrings_say():
    assert {d.name for d in (PKG / "analysis").iterdir() if (d / "__init__.py").exists()} == set(ANALYSIS_FOLDERS)
    bad = []
    for folder, allowed in ANALYSIS_FOLDERS.items():
        for f in (PKG / "analysis" / folder).rglob("*.py"):
            for m in _imports(f):
                parts = m.split(".")
                if parts[:2] == ["trainprof", "analysis"] and len(parts) > 2 and parts[2] != folder \
                        and parts[2] not in allowed:
                    bad.append(f"analysis/{folder}/{f.name} imports {m}")
    assert bad == []
