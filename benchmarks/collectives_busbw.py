"""Trace-derived busbw vs `trainprof bench allreduce`, same message size, same ranks (gloo, CPU).

For each size S: a gloo job of TRIALS profiled all_reduces of S bytes
(tests/data/scripts/planted_straggler.py, no straggler) analysed by trainprof
(analysis/collectives_job.py: busbw from the last arriver's duration), and
`trainprof bench allreduce --nproc N --sizes S` (median of timed collectives). Prints the
two busbw and their ratio per trial, the median ratio, and writes JSON.
Usage: python benchmarks/collectives_busbw.py [--nproc 2] [--sizes 4M,16M] [--trials 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import environment

from trainprof.analysis.collectives import rank_collectives
from trainprof.analysis.collectives_job import job_collectives
from trainprof.analysis.context import Context
from trainprof.bench.parse import parse_bytes
from trainprof.trace import read_trace

SCRIPT = Path(__file__).parents[1] / "tests" / "data" / "scripts" / "planted_straggler.py"


def trace_busbw(nproc: int, size: int, trials: int, tmp: Path) -> float:
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
                    str(SCRIPT), str(tmp), "-1", "0", str(trials), str(size // 4)], check=True,
                   capture_output=True)
    blocks = {i: rank_collectives(Context.build(read_trace(str(f))))
              for i, f in enumerate(sorted(tmp.glob("rank*.json")))}
    return job_collectives(blocks)["groups"][0]["median_busbw_gbs"]


def bench_busbw(nproc: int, size: int, iters: int) -> float:
    r = subprocess.run([sys.executable, "-m", "trainprof", "bench", "allreduce", "--nproc", str(nproc),
                        "--sizes", str(size), "--iters", str(iters), "--json", "--device", "cpu",
                        "--out", tempfile.mkdtemp()], check=True, capture_output=True, text=True)
    rows = json.loads(r.stdout)["results"]
    return rows[0]["busbw_gbs"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--sizes", default="4M,16M")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20, help="collectives per job and per bench")
    ap.add_argument("--out", default="benchmarks/results/collectives_busbw.json")
    a = ap.parse_args()
    rows = []
    for size in (parse_bytes(s, "--sizes") for s in a.sizes.split(",")):
        for trial in range(a.trials):
            with tempfile.TemporaryDirectory() as tmp:
                tr = trace_busbw(a.nproc, size, a.iters, Path(tmp))
            be = bench_busbw(a.nproc, size, a.iters)
            rows.append({"size": size, "trial": trial, "trace_busbw_gbs": tr, "bench_busbw_gbs": be, "ratio": tr / be})
            print(f"S={size:>10,} trial {trial}: trace {tr:.3f} GB/s  bench {be:.3f} GB/s  ratio {tr / be:.3f}")
        med = statistics.median(r["ratio"] for r in rows if r["size"] == size)
        print(f"S={size:>10,} median ratio trace/bench: {med:.3f}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"environment": environment("cpu"), "nproc": a.nproc, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
