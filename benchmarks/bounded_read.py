"""What bounded reading (issue #19, trace/limits.py) costs the trace reader.

    python benchmarks/bounded_read.py [TRACE ...] [--trials 7] [--out benchmarks/results/bounded_read.json]

For each trace, `read_trace` runs with the guard (size cap, first-byte check, UTF-8
check of non-ASCII pieces) and with the guard replaced by a pass-through, alternating in one
process (drift hits both), `--trials` times each; prints median seconds and the ratio
guarded / unguarded, and writes the JSON. Default traces: the largest shipped real trace
(gzip, 216k events) and the same decompressed, plus a copy whose names hold non-ASCII
UTF-8 (every piece then pays the full check).
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
DEFAULT = REPO / "tests/data/traces/real/hta_ddp_2rank_nccl_v100/df_index_resolver.json.gz"


def _variants(src: Path, tmp: Path) -> list[Path]:
    raw = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
    plain = tmp / "plain.json"
    plain.write_bytes(raw)
    cjk = tmp / "non_ascii.json"  # a UTF-8 name in every event: no piece is pure ASCII
    cjk.write_bytes(raw.replace(b'"name": "', '"name": "注意力·'.encode()))
    return [src, plain, cjk]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--trials", type=int, default=7)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/bounded_read.json"))
    args = ap.parse_args()

    from trainprof.trace import limits, reader
    from trainprof.trace.reader import read_trace

    guarded = limits.guard

    def passthrough(path, pieces, stats, cap=None):  # noqa: ANN001, ARG001
        yield from pieces

    rows = []
    with tempfile.TemporaryDirectory() as d:
        paths = [Path(t) for t in args.traces] or _variants(DEFAULT, Path(d))
        for p in paths:
            read_trace(p)  # warm the page cache and the imports
            times: dict[str, list[float]] = {"guarded": [], "unguarded": []}
            for _ in range(args.trials):
                for name, g in (("guarded", guarded), ("unguarded", passthrough)):
                    reader.limits.guard = g
                    t0 = time.perf_counter()
                    read_trace(p)
                    times[name].append(time.perf_counter() - t0)
            reader.limits.guard = guarded
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append({"trace": p.name, "bytes": p.stat().st_size, "trials": args.trials,
                         "guarded_median_s": med["guarded"], "unguarded_median_s": med["unguarded"],
                         "ratio": med["guarded"] / med["unguarded"]})
    print(f"{'trace':32} {'MB':>7} {'guarded s':>10} {'unguarded s':>12} {'ratio':>6}")
    for r in rows:
        print(f"{r['trace'][:32]:32} {r['bytes'] / 1e6:7.1f} {r['guarded_median_s']:10.3f} "
              f"{r['unguarded_median_s']:12.3f} {r['ratio']:6.3f}")
    from _common import write_json

    import platform

    write_json(args.out, {"benchmark": "bounded_read", "version": 1, "python": platform.python_version(),
                          "rows": rows})


if __name__ == "__main__":
    main()
