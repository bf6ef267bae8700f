"""Kernel classification cost: the shipped table as compiled (a leading `\\b` becomes a
literal space, one pattern at a time) against the same table compiled naively (`\\b` kept,
one alternation per rule), side by side in one process, on the distinct kernel names of the
shipped real traces.

    PYTHONPATH=src python benchmarks/kernel_classes.py [--trials 7] [--out benchmarks/results/kernel_classes.json]

Prints per trace: distinct kernel names, median ms per full classification (class + Tensor
Core flag of every name), and the naive/shipped ratio.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import environment, write_json  # noqa: E402

from trainprof.trace import Kind, read_trace  # noqa: E402
from trainprof.trace.classify import KernelClasses, Rule, classify_names, parse_classes, tokens  # noqa: E402

REAL = Path(__file__).resolve().parents[1] / "tests" / "data" / "traces" / "real"


def naive(kc_text: str) -> KernelClasses:
    """The same rules, `\\b` kept and one alternation per rule, searched in the unpadded string."""
    import tomllib

    data = tomllib.loads(kc_text)

    def alt(ps):
        return (re.compile("|".join(f"(?:{p})" for p in ps)),)
    shipped = parse_classes(kc_text)
    rules = tuple(Rule(r["class"], "", alt(r["match"])) for r in data["rule"])
    tc = data["tensor_core"]
    return KernelClasses(shipped.names, rules, alt(tc["match"]), alt(tc.get("unless", [])) if tc.get("unless") else (),
                         frozenset(tc["classes"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=7)
    ap.add_argument("--out", default="benchmarks/results/kernel_classes.json")
    args = ap.parse_args()
    text = resources.files("trainprof.trace").joinpath("kernel_classes.toml").read_text("utf-8")
    shipped, slow = parse_classes(text), naive(text)
    rows = []
    print(f"{'trace':58} {'names':>5} {'shipped ms':>10} {'naive ms':>9} {'ratio':>6}")
    for path in sorted(REAL.rglob("*.json.gz")):
        t = read_trace(path)
        ids = np.unique(t.name_id[t.kind == Kind.KERNEL])
        if not len(ids):
            continue
        names = tuple(t.names[i] for i in ids)
        # the naive table sees the unpadded string: search it as its patterns were written for
        naive_padded = [tokens(n) for n in names]
        assert [shipped.classify(n) for n in names] == [
            next((r.cls for r in slow.rules if r.patterns[0].search(tk)), "other") for tk in naive_padded]
        times = {"shipped": [], "naive": []}
        for _ in range(args.trials):  # alternate so drift hits both alike
            s = time.perf_counter()
            classify_names(names, shipped)
            times["shipped"].append(time.perf_counter() - s)
            s = time.perf_counter()
            for tk in naive_padded:
                cls = next((r.cls for r in slow.rules if r.patterns[0].search(tk)), "other")
                if cls in slow.tensor_core_classes:
                    slow.tensor_core[0].search(tk)
            times["naive"].append(time.perf_counter() - s)
        a, b = statistics.median(times["shipped"]) * 1e3, statistics.median(times["naive"]) * 1e3
        rel = str(path.relative_to(REAL))
        rows.append({"trace": rel, "names": len(names), "shipped_ms": a, "naive_ms": b, "ratio": b / a})
        print(f"{rel[:58]:58} {len(names):5d} {a:10.2f} {b:9.2f} {b / a:6.1f}")
    write_json(args.out, {"benchmark": "kernel_classes", "version": 1, "env": environment("cpu"),
                          "trials": args.trials, "rows": rows})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
