"""Speed and memory of read_trace on the largest shipped real traces: a table and a JSON file.

    PYTHONPATH=src python benchmarks/trace_read.py [--trials 3] [--out benchmarks/results/trace_read.json]

Each measurement runs in a fresh interpreter so the peak is this read's alone. The peak is
VmHWM from /proc/self/status: ru_maxrss would not do, Linux carries the parent's high-water
mark into a forked child (a parent holding other traces read 227 MB instead of 118). For
comparison with HTA on the same trace, see benchmarks/trace_analysis.py.

Both readers are measured, in turns within each trial: "scanner" (the C scanner, trace/_scan.c,
the default where it is built) and "pure" (msgspec Structs -> columns, what an install without
a C compiler runs); the ratio is scanner / pure of the medians.
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import environment, write_json  # noqa: E402

REAL = Path(__file__).resolve().parents[1] / "tests" / "data" / "traces" / "real"
REFERENCE = "hta_ddp_2rank_nccl_v100/df_index_resolver.json.gz"

_PROBE = r"""
import json, sys, time
import numpy, msgspec
from trainprof.trace import find_steps, link, read_trace, reader
if sys.argv[2] == "pure":
    reader._scan = None
elif reader._scan is None:
    sys.exit("the C scanner is not built (pip install -e . with a C compiler)")
def status_mb(key):  # VmRSS now, VmHWM = peak of this process image
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key)) / 1024
base = status_mb("VmRSS:")
t0 = time.perf_counter()
tr = read_trace(sys.argv[1])
t1 = time.perf_counter()
steps = find_steps(tr, link(tr))
t2 = time.perf_counter()
print(json.dumps({"read_s": t1 - t0, "link_steps_s": t2 - t1, "base_mb": base,
                  "peak_mb": status_mb("VmHWM:"),
                  "events": sum(tr.phase_counts.values()), "rows": len(tr)}))
"""


READERS = ("scanner", "pure")


def _measure(path: Path, which: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(path), which], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=3, help="fresh interpreters per trace (default 3)")
    ap.add_argument("--out", default="benchmarks/results/trace_read.json")
    a = ap.parse_args()
    files = sorted(REAL.rglob("*.json*"), key=lambda p: p.stat().st_size)
    targets = [REAL / REFERENCE] + ([files[-1]] if files and files[-1].resolve() != (REAL / REFERENCE).resolve() else [])
    rows = []
    print(f"{'trace':50} {'reader':>8} {'events':>9} {'rows':>9} {'read ms':>9} {'link+steps ms':>14} {'peak MB':>8}")
    for p in targets:
        ms: dict[str, list[dict]] = {r: [] for r in READERS}
        for _ in range(a.trials):  # turns, so a change in the machine's load reaches both alike
            for r in READERS:
                ms[r].append(_measure(p, r))
        for r in READERS:
            m = ms[r]
            row = {"trace": str(p.relative_to(REAL)), "reader": r, "events": m[0]["events"], "rows": m[0]["rows"],
                   "read_s_median": statistics.median(x["read_s"] for x in m),
                   "link_steps_s_median": statistics.median(x["link_steps_s"] for x in m),
                   "peak_mb_median": statistics.median(x["peak_mb"] for x in m), "base_mb": m[0]["base_mb"],
                   "trials": a.trials}
            rows.append(row)
            print(f"{row['trace'][:50]:50} {r:>8} {row['events']:>9} {row['rows']:>9} {row['read_s_median'] * 1e3:>9.0f} "
                  f"{row['link_steps_s_median'] * 1e3:>14.0f} {row['peak_mb_median']:>8.0f}")
        print(f"{'':50} {'ratio':>8} {rows[-2]['read_s_median'] / rows[-1]['read_s_median']:>39.2f}")
    write_json(a.out, {"benchmark": "trace_read", "version": 2, "environment": environment("cpu"), "rows": rows})
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
