"""Does analysis/graph/_loops.c pay for itself? The analysis with and without the C loops.

    python benchmarks/graph_loops.py [--trials 7] TRACE...

Two measurements per trace, trials alternating (C first on even trials, pure first on odd):

* **end to end**: `trainprof analyze TRACE --json` in fresh processes; the pure variant sets
  `chains._loops = None` before the CLI runs (the path a machine without a compiler takes).
  Both outputs must be byte-identical; the table gives median wall times and the median of the
  per-trial ratios C / pure.
* **the graph walks alone**: in one process, the graph built once, `critical_path` + the
  standard what-ifs (the only callers of the loops) timed with the loops on and off.

Writes benchmarks/results/graph_loops.json.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

RUN = ("import sys; import trainprof.analysis.graph.chains as c\n"
       "if sys.argv[1] == 'pure': c._loops = None\n"
       "elif c._loops is None: sys.exit('the C loops are not built (python setup.py build_ext --inplace)')\n"
       "from trainprof.cli import main\n"
       "sys.exit(main(['analyze', sys.argv[2], '--json']))")


def _e2e(variant: str, trace: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", RUN, variant, trace], capture_output=True, check=True)
    return time.perf_counter() - t0, hashlib.sha256(p.stdout).hexdigest()


def end_to_end(trace: str, trials: int) -> dict:
    times: dict[str, list[float]] = {"c": [], "pure": []}
    digests = set()
    for i in range(trials):
        for v in (("c", "pure") if i % 2 == 0 else ("pure", "c")):
            s, h = _e2e(v, trace)
            times[v].append(s)
            digests.add(h)
    ratios = [c / p for c, p in zip(times["c"], times["pure"])]
    return {"c_s": statistics.median(times["c"]), "pure_s": statistics.median(times["pure"]),
            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
            "identical_output": len(digests) == 1, "times": times}


def walks(trace: str, trials: int) -> dict:
    import trainprof.analysis.graph.chains as chains
    from trainprof.analysis.graph.clock import corrected
    from trainprof.analysis.graph.critical_path import critical_path
    from trainprof.analysis.graph.depgraph import build_graph
    from trainprof.analysis.graph.whatif import standard_whatifs
    from trainprof.analysis.timeline.context import Context
    from trainprof.trace import read_trace

    loops = chains._loops
    ctx, _ = corrected(Context.build(read_trace(trace)))
    g = build_graph(ctx)
    chains.chains_of(g)  # built once per graph either way
    times: dict[str, list[float]] = {"c": [], "pure": []}
    try:
        for i in range(trials):
            for v in (("c", "pure") if i % 2 == 0 else ("pure", "c")):
                chains._loops = loops if v == "c" else None
                t0 = time.perf_counter()
                critical_path(ctx, 10, g)
                standard_whatifs(ctx, g)
                times[v].append(time.perf_counter() - t0)
    finally:
        chains._loops = loops
    ratios = [c / p for c, p in zip(times["c"], times["pure"])]
    return {"c_s": statistics.median(times["c"]), "pure_s": statistics.median(times["pure"]),
            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
            "nodes": g.n_nodes, "edges": g.n_edges}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--trials", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/graph_loops.json"))
    a = ap.parse_args()
    import os

    from _common import write_json

    rows = []
    print("| trace | walks C s | walks pure s | walks C/pure | analyze C s | analyze pure s | analyze C/pure (min–max) | same output |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for tr in a.traces:
        w = walks(tr, a.trials)
        e = end_to_end(tr, a.trials)
        rows.append({"trace": tr, "walks": w, "end_to_end": e, "load": os.getloadavg()})
        print(f"| {Path(tr).name} | {w['c_s']:.3f} | {w['pure_s']:.3f} | {w['ratio_median']:.3f} | {e['c_s']:.3f} | "
              f"{e['pure_s']:.3f} | {e['ratio_median']:.3f} ({e['ratio_min']:.3f}–{e['ratio_max']:.3f}) | "
              f"{e['identical_output']} |", flush=True)
    write_json(a.out, {"benchmark": "graph_loops", "trials": a.trials, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
