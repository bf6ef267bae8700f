"""No function in src/trainprof over 80 lines (issue #30, the house style: functions ≲80 lines).

Length = the lines from `def` to the function's last line (decorators left out; its docstring,
comments and nested functions counted). On failure the message lists every function over the
limit, longest first, with where it is.
"""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "src" / "trainprof"
MAX_LINES = 80


def function_lengths(root: Path) -> list[tuple[int, str]]:
    """(lines, "path:line name") of every function and method under root, longest first."""
    out = []
    for f in sorted(root.rglob("*.py")):
        tree = ast.parse(f.read_text("utf-8"), filename=str(f))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                where = f"{f.relative_to(root.parent)}:{node.lineno} {node.name}"
                out.append((node.end_lineno - node.lineno + 1, where))
    return sorted(out, reverse=True)


def test_no_function_over_80_lines():
    lengths = function_lengths(PKG)
    over = [f"{n} lines: {where}" for n, where in lengths if n > MAX_LINES]
    assert not over, f"{len(over)} functions over {MAX_LINES} lines (split them):\n" + "\n".join(over)


def test_the_walk_sees_nested_and_async_functions(tmp_path):
    # a 3-line function, a 4-line async one holding a 2-line nested one: all three measured
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text("def f():\n    x = 1\n    return x\n\n\n"
                              "async def g():\n    def h():\n        pass\n    return h\n")
    assert function_lengths(pkg) == [(4, "pkg/m.py:6 g"), (3, "pkg/m.py:1 f"), (2, "pkg/m.py:7 h")]
