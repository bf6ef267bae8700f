"""Peak memory of trainprof on the memory attacks of issue #33, and on real traces.

    python benchmarks/attack_memory.py [--cap-gib 6] [--out benchmarks/results/attack_memory.json]

Each attack (tests/fuzz/attacks.py, at the issue's full size) is written to a temp folder and
read by `trainprof analyze FILE` (`report DIR` for the record) in a fresh process whose
address space is capped at --cap-gib (so a run that would take the machine's memory stops
with MemoryError there instead); prints exit code, peak RSS (ru_maxrss), wall time and the
first stderr line. Then, for each real trace given (default: the shipped real traces), a
fresh process reads it with `read_trace` and reports its peak RSS, the RSS before reading
(interpreter and imports) and the bytes of the event data it kept (the Trace's arrays and
tables): the ratio (peak - before) / kept is the multiple docs/reliability.md states.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = str(REPO / "src")
sys.path.insert(0, str(REPO / "tests" / "fuzz"))

import attacks  # noqa: E402
from _common import write_json  # noqa: E402

_CHILD = r"""
import resource, subprocess, sys, time
cap = int(sys.argv[1])
def limit():
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
t0 = time.monotonic()
p = subprocess.run(sys.argv[2:], capture_output=True, text=True, preexec_fn=limit)
wall = time.monotonic() - t0
err = [ln for ln in p.stderr.splitlines() if ln.strip()]
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, round(wall, 1), len(err))
print(err[-1][:300] if err else "")
"""

_KEPT = r"""
import dataclasses, resource, sys
import numpy as np
from trainprof.trace import read_trace
def rss_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
before = rss_kb()
t = read_trace(sys.argv[1])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
def size(o):
    if isinstance(o, np.ndarray):
        return o.nbytes
    if dataclasses.is_dataclass(o):
        return sum(size(getattr(o, f.name)) for f in dataclasses.fields(o))
    if isinstance(o, dict):
        return sum(size(v) for v in o.values())
    if isinstance(o, (list, tuple)):
        return sum(size(v) for v in o)
    if isinstance(o, str):
        return len(o)
    return 8
print(before, peak, size(t), len(t))
"""


def run_attack(argv: list[str], cap: int) -> dict:
    # 300 s: the slowest attack before its fix spun 86 s; a regression must not hang the benchmark
    out = subprocess.run([sys.executable, "-c", _CHILD, str(cap), *argv], capture_output=True, text=True,
                         env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}, timeout=300)
    head, last = (out.stdout.splitlines() + ["", ""])[:2]
    rc, rss_kb, wall, n_err = head.split()
    return {"rc": int(rc), "peak_rss_mb": round(int(rss_kb) / 1024), "wall_s": float(wall),
            "stderr_lines": int(n_err), "last_stderr_line": last}


def kept_ratio(trace: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _KEPT, str(trace)], capture_output=True, text=True,
                         env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}, check=True)
    before, peak, kept, events = map(int, out.stdout.split())
    return {"trace": str(trace.relative_to(REPO)) if trace.is_relative_to(REPO) else str(trace),
            "events": events, "size_mb": round(trace.stat().st_size / 2**20, 1),
            "before_mb": round(before / 1024), "peak_mb": round(peak / 1024), "kept_mb": round(kept / 2**20, 1),
            "ratio": round((peak - before) * 1024 / max(kept, 1), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--cap-gib", type=float, default=6.0)
    ap.add_argument("--only", nargs="*", help="attack names to run (default: all)")
    ap.add_argument("--no-attacks", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--src", default=str(REPO / "src"), help="the trainprof to measure (a copy of an older tree)")
    args = ap.parse_args()
    global SRC
    SRC = args.src
    cap = int(args.cap_gib * 2**30)
    results: dict = {"cap_gib": args.cap_gib, "attacks": {}, "real": []}
    if not args.no_attacks:
        with tempfile.TemporaryDirectory() as d:
            for name, (write, n) in {**attacks.TRACE_ATTACKS, **attacks.RECORD_ATTACKS}.items():
                if args.only and name not in args.only:
                    continue
                t0 = time.monotonic()
                if name in attacks.RECORD_ATTACKS:
                    target = write(Path(d) / name, n)
                    argv = [sys.executable, "-m", "trainprof", "report", str(target), "--format", "md"]
                else:
                    target = write(Path(d) / f"{name}.json.gz", n)
                    argv = [sys.executable, "-m", "trainprof", "analyze", str(target), "--json"]
                r = run_attack(argv, cap)
                r.update(payload_mb=round(n / 2**20), file_kb=round(target.stat().st_size / 1024) if target.is_file()
                         else None, made_in_s=round(time.monotonic() - t0 - r["wall_s"], 1))
                results["attacks"][name] = r
                print(f"{name:16} rc {r['rc']}  peak {r['peak_rss_mb']:>6} MB  {r['wall_s']:>6} s  "
                      f"{r['stderr_lines']} line(s): {r['last_stderr_line'][:150]}", flush=True)
                if target.is_file():
                    target.unlink()
    traces = [Path(t) for t in args.traces] or sorted(
        p for p in (REPO / "tests/data/traces/real").rglob("*.json*") if p.stat().st_size > 1 << 20)
    for t in traces:
        r = kept_ratio(t)
        results["real"].append(r)
        print(f"{r['trace'][-60:]:60} {r['events']:>8} events  before {r['before_mb']} MB  peak {r['peak_mb']} MB  "
              f"kept {r['kept_mb']} MB  (peak-before)/kept {r['ratio']}", flush=True)
    if args.out:
        write_json(args.out, results)


if __name__ == "__main__":
    main()
