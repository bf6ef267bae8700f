"""Trace-derived busbw vs `trainprof bench allreduce`'s timing, on the same all_reduces (gloo, CPU).

For each size S, one gloo job (tests/data/scripts/busbw_paired.py) runs --rounds rounds; in
each, the bench's own timing code times --iters back-to-back all_reduces under
torch.profiler, so trainprof's analysis of the trace (analysis/job/collectives_job.py) sees
exactly the collectives the bench timed. Per round: the bench's busbw (mean time per
collective, averaged over ranks: nccl-tests' figure), the trace's aggregate busbw
(Σ S / Σ latency × factor, also a mean) and its median busbw; the ratios trace / bench; the
median ratio over rounds. Prints a table (and the job's stderr if it fails), writes JSON.

An earlier version compared separate jobs (a profiled job, then `trainprof bench allreduce`):
on this shared 2-core machine one 4 MB all_reduce took 1.6-3.6 ms from one second to the
next, so separate measurements disagreed by up to 2× whatever the method (docs/collectives.md).

Usage: python benchmarks/collectives_busbw.py [--nproc 2] [--sizes 4M,16M] [--rounds 7] [--iters 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import environment, write_json

from trainprof.analysis.job.busbw import bus_factor
from trainprof.analysis.job.collectives import rank_collectives
from trainprof.analysis.job.collectives_job import job_collectives
from trainprof.analysis.timeline.context import Context
from trainprof.bench.parse import parse_bytes
from trainprof.trace import read_trace

SCRIPT = Path(__file__).parents[1] / "tests" / "data" / "scripts" / "busbw_paired.py"


def paired_rounds(nproc: int, size: int, rounds: int, iters: int) -> list[dict]:
    """Per round: bench busbw, trace aggregate and median busbw (GB/s), and the load average."""
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                            f"--nproc-per-node={nproc}", str(SCRIPT), tmp, str(size // 4), str(rounds), str(iters)],
                           capture_output=True, text=True)
        if r.returncode:
            sys.stderr.write(r.stderr[-4000:])
            raise SystemExit(f"the paired job failed (exit code {r.returncode}); its stderr is above")
        bench = json.loads((Path(tmp) / "bench.json").read_text())
        out = []
        for k, seconds in enumerate(bench["seconds"]):
            files = sorted((Path(tmp) / f"round{k}").glob("rank*.json"))
            blocks = {i: rank_collectives(Context.build(read_trace(str(f)))) for i, f in enumerate(files)}
            g = next(x for x in job_collectives(blocks)["groups"] if x["op"] == "all_reduce")
            b = bench["bytes"] / seconds / 1e9 * bus_factor("all_reduce", bench["ranks"])
            out.append({"bench_busbw_gbs": b, "trace_aggregate_busbw_gbs": g["aggregate_busbw_gbs"],
                        "trace_median_busbw_gbs": g["median_busbw_gbs"], "collectives": g["count"]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--sizes", default="4M,16M")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20, help="all_reduces per round")
    ap.add_argument("--out", default="benchmarks/results/collectives_busbw.json")
    a = ap.parse_args()
    results = []
    print(f"{'S':>10} {'round':>5} {'bench':>8} {'trace agg':>9} {'trace p50':>9} {'agg/bench':>9} {'p50/bench':>9}")
    for size in (parse_bytes(s, "--sizes") for s in a.sizes.split(",")):
        load0 = os.getloadavg()[0]
        rows = paired_rounds(a.nproc, size, a.rounds, a.iters)
        for k, x in enumerate(rows):
            x["agg_ratio"] = x["trace_aggregate_busbw_gbs"] / x["bench_busbw_gbs"]
            x["median_ratio"] = x["trace_median_busbw_gbs"] / x["bench_busbw_gbs"]
            print(f"{size:>10,} {k:>5} {x['bench_busbw_gbs']:8.3f} {x['trace_aggregate_busbw_gbs']:9.3f} "
                  f"{x['trace_median_busbw_gbs']:9.3f} {x['agg_ratio']:9.3f} {x['median_ratio']:9.3f}")
        agg = statistics.median(x["agg_ratio"] for x in rows)
        med = statistics.median(x["median_ratio"] for x in rows)
        load = (load0 + os.getloadavg()[0]) / 2
        print(f"{size:>10,} median ratio: aggregate/bench {agg:.3f}, median/bench {med:.3f} (load average {load:.1f})")
        results.append({"bytes": size, "rounds": rows, "median_agg_ratio": agg, "median_median_ratio": med,
                        "load_avg": load})
    write_json(a.out, {"benchmark": "collectives_busbw", "version": 2, "nproc": a.nproc, "iters": a.iters,
                       "environment": environment("cpu"), "results": results})
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
