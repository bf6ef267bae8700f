"""trainprof's critical path side by side with HTA 0.5's on every shipped real trace.

HTA's critical path fails under pandas 3 (ValueError in CPGraph._create_event_nodes), so it
runs in its own venv with pandas < 3, never in the project's environment:

    python -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install HolisticTraceAnalysis "pandas<3"
    PYTHONPATH=src python benchmarks/critical_path_vs_hta.py [--hta-python /tmp/hta-venv/bin/python]

Per trace, one window: HTA's `critical_path_analysis(rank=0, annotation="ProfilerStep",
instance_id=1)` (the second step; the first when there is one; annotation "" = the whole
trace when there is no ProfilerStep). HTA's window starts at that annotation's start; ours
is the same: the walk from the step's end (the later of its CPU range's end and the end of
the GPU work launched in it) back to the step's start. Path length = the sum of the edge
weights on HTA's longest path vs the length of ours.

Timing: the critical-path call only, trace parsing excluded on both sides (HTA:
TraceAnalysis() done before the clock starts; ours: read_trace() likewise). Ours is timed two
ways: "whole" builds the graph of the whole trace (what `trainprof analyze` does: one graph
answers every step and the what-ifs), "step" restricts the trace to HTA's step first, as
`trainprof analyze --step N` does (trace/subset.py; HTA too builds only the window's graph),
and includes that restriction and the linking it needs. Median of --trials runs, each side
in its own process (HTA in a subprocess per trace, so a crash or a hang stays there).
Output: a table and --out JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO / "tests" / "data" / "traces" / "real"
VERSION = 2  # 2: the one-step timing ("step") beside the whole-trace one

HTA_SCRIPT = r'''
import json, logging, os, statistics, sys, time, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
path, trials = sys.argv[1], int(sys.argv[2])
a = TraceAnalysis(trace_files={0: os.path.basename(path)}, trace_dir=os.path.dirname(path))
df = a.t.get_trace(0)
sym = a.t.symbol_table.get_sym_id_map()
ids = [v for k, v in sym.items() if "ProfilerStep" in k]
ann = df[df.name.isin(ids)].sort_values("ts") if ids else df.iloc[:0]
annotation = "ProfilerStep" if len(ann) else ""
instance = 1 if len(ann) > 1 else 0
window = ([float(ann.ts.iloc[instance]), float(ann.ts.iloc[instance] + ann.dur.iloc[instance])]
          if len(ann) else [float(df.ts.min()), float((df.ts + df.dur).max())])
times, out = [], None
for _ in range(trials):
    t0 = time.perf_counter()
    r = a.critical_path_analysis(rank=0, annotation=annotation, instance_id=instance if annotation else None)
    times.append(time.perf_counter() - t0)
    if r is None or not r[1]:
        print(json.dumps({"error": "critical_path_analysis returned no path"}))
        sys.exit(0)
    bd = r[0].get_critical_path_breakdown()
    bound = bd.groupby("bound_by").duration.sum()
    out = {"length_us": float(bd.duration.sum()), "edges": int(len(bd)),
           "bound_by": {str(k): float(v) for k, v in bound.items() if str(k)}}
out.update(annotation=annotation, instance=instance, window=window, seconds=times,
           ann_name=str(a.t.symbol_table.get_sym_table()[int(ann.name.iloc[instance])]) if len(ann) else None)
print(json.dumps(out))
'''


def run_hta(python: str, path: Path, trials: int, timeout_s: int) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(HTA_SCRIPT)
    try:
        p = subprocess.run([python, f.name, str(path), str(trials)], capture_output=True, text=True,
                           timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout_s} s"}
    finally:
        Path(f.name).unlink()
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode or not lines:
        tail = (p.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": tail[:200]}
    return json.loads(lines[-1])


def run_ours(path: Path, step: int | None, trials: int) -> dict:
    import numpy as np

    from trainprof.analysis.timeline.context import Context
    from trainprof.analysis.graph.critical_path import step_bounds, summarise, walk
    from trainprof.analysis.graph.depgraph import build_graph
    from trainprof.trace import read_trace

    trace = read_trace(str(path))
    times, out = [], {}
    for _ in range(trials):
        t0 = time.perf_counter()
        ctx = Context.build(trace)
        g = build_graph(ctx)
        bounds = step_bounds(ctx, g)
        if step is not None and not ctx.steps.pseudo and any(b.number == step for b in bounds):
            # the step HTA's window is (its annotation's name, ProfilerStep#N)
            b = next(b for b in bounds if b.number == step)
        else:
            b = bounds[0]
        # from the step's CPU start (HTA's window begins at its annotation) to its end
        number, start, ends = b.number, b.cpu_start, b.ends
        end = int(ends[np.argmax(g.t_us[ends])])
        p = walk(g, g.t_us, g.w_us, g.binding, end, float(g.t_us[start]))
        s = summarise(ctx, g, p, 5, max_segments=0)
        times.append(time.perf_counter() - t0)
        out = {"step": number, "start_us": float(g.t_us[start]), "length_us": s["length_us"],
               "recorded_us": _recorded(ctx, g, p), "share_pct": s["share_pct"], "nodes": g.n_nodes,
               "edges": g.n_edges}
    out["seconds"] = times
    if step is not None and not ctx.steps.pseudo:
        out.update(_one_step(trace, step, trials))
    return out


def _one_step(trace, step: int, trials: int) -> dict:  # noqa: ANN001
    """The same walk on the trace restricted to `step` (`analyze --step N`'s path)."""
    import numpy as np

    from trainprof.analysis.timeline.context import Context
    from trainprof.analysis.graph.critical_path import step_bounds, summarise, walk
    from trainprof.analysis.graph.depgraph import build_graph
    from trainprof.trace import find_steps, link
    from trainprof.trace.subset import step_subset

    times, length = [], None
    for _ in range(trials):
        t0 = time.perf_counter()
        links = link(trace)
        ctx = Context.build(step_subset(trace, links, find_steps(trace, links), step))
        g = build_graph(ctx)
        b = step_bounds(ctx, g)[0]
        start, ends = b.cpu_start, b.ends
        end = int(ends[np.argmax(g.t_us[ends])])
        p = walk(g, g.t_us, g.w_us, g.binding, end, float(g.t_us[start]))
        length = summarise(ctx, g, p, 5, max_segments=0)["length_us"]
        times.append(time.perf_counter() - t0)
    return {"step_seconds": times, "step_length_us": length}


def _recorded(ctx, g, p) -> float:
    """Our path length counted as HTA counts it: HTA's edges between consecutive ops on a
    thread weigh 0 (hta/analyzers/critical_path_analysis.py, CPEdgeType.DEPENDENCY), so
    host time outside every recorded op (Python between ops, an annotation's self time, a
    thread's idle gap) is not in its length. Subtract those pieces of ours."""
    import numpy as np

    from trainprof.analysis.graph.depgraph import E_CPU
    from trainprof.trace import Kind

    e = np.maximum(p.edge, 0)
    row = g.row[e]
    untraced = (p.edge >= 0) & (g.etype[e] == E_CPU) & ~p.slack & (
        (row < 0) | np.isin(ctx.trace.kind[np.maximum(row, 0)], [Kind.USER_ANNOTATION, Kind.PROFILER_STEP]))
    return float(p.dur_us.sum() - p.dur_us[untraced].sum())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hta-python", default="/tmp/hta-venv/bin/python")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per trace for HTA (default 900)")
    ap.add_argument("--only", help="substring of the trace paths to run")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "critical_path_vs_hta.json"))
    args = ap.parse_args()
    files = sorted(TRACES.rglob("*.json.gz"))
    if args.only:
        files = [f for f in files if args.only in str(f)]
    rows = []
    print(f"{'trace':50} {'ours µs':>12} {'recorded':>12} {'HTA µs':>12} {'diff':>7} {'ours s':>7} {'HTA s':>7} "
          f"{'ratio':>6} {'step s':>7} {'ratio':>6}")
    for f in files:
        name = str(f.relative_to(TRACES))
        hta = run_hta(args.hta_python, f, args.trials, args.timeout)
        name_ = hta.get("ann_name") or ""
        step = int(name_.split("#")[1].split()[0]) if "#" in name_ else None
        ours = run_ours(f, step, args.trials)
        row = {"trace": name, "hta": hta, "ours": ours}
        to = statistics.median(ours["seconds"])
        if "error" in hta:
            print(f"{name[:50]:50} {ours['length_us']:12,.0f} {ours['recorded_us']:12,.0f} "
                  f"HTA failed: {hta['error'][:60]}")
        else:
            th = statistics.median(hta["seconds"])
            diff = (100.0 * (ours["recorded_us"] - hta["length_us"]) / hta["length_us"]
                    if hta["length_us"] else None)
            ts = statistics.median(ours["step_seconds"]) if ours.get("step_seconds") else None
            row.update(diff_pct=diff, ours_s=to, hta_s=th, speedup=th / to if to > 0 else None,
                       ours_step_s=ts, speedup_step=th / ts if ts else None)
            one = f"{ts:7.3f} {th / ts:5.0f}×" if ts else f"{'–':>7} {'–':>6}"
            print(f"{name[:50]:50} {ours['length_us']:12,.0f} {ours['recorded_us']:12,.0f} {hta['length_us']:12,.0f} "
                  f"{diff if diff is not None else float('nan'):6.2f}% {to:7.3f} {th:7.2f} {th / to:5.0f}× {one}")
        rows.append(row)
        sys.stdout.flush()
    import platform

    from _common import write_json

    write_json(args.out, {"benchmark": "critical_path_vs_hta", "version": VERSION, "trials": args.trials,
                          "python": platform.python_version(), "results": rows})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
