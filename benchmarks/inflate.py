"""Inflate speed of a .json.gz trace: the stdlib's zlib, ISA-L (python-isal, trainprof's default
where its wheel installs) and zlib-ng, in one process taking turns, as trace/stream.py calls them
(decompressobj(wbits=31), output pieces of stream.CHUNK).

    python benchmarks/inflate.py [TRACE.json.gz] [--trials 9]

Prints per module the median time, MB/s of JSON produced, and the ratio to zlib. The default
trace is the largest shipped one (the 2-rank DDP V100 trace: 3 MB in, 54 MB out).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DDP = REPO / "tests/data/traces/real/hta_ddp_2rank_nccl_v100/df_index_resolver.json.gz"
MODULES = {"zlib": "zlib", "isal": "isal.isal_zlib", "zlib-ng": "zlib_ng.zlib_ng"}
CHUNK = 4 << 20  # trace/stream.py's CHUNK
IN_CHUNK = 1 << 20


def inflate(mod, raw: bytes) -> int:
    d, n, pos = mod.decompressobj(wbits=31), 0, 0
    while pos < len(raw):
        data = raw[pos:pos + IN_CHUNK]
        pos += IN_CHUNK
        while data:
            n += len(d.decompress(data, CHUNK))
            data = d.unconsumed_tail
    return n + len(d.flush())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", type=Path, default=DDP)
    ap.add_argument("--trials", type=int, default=9)
    a = ap.parse_args()
    raw = a.trace.read_bytes()
    mods = {}
    for name, modname in MODULES.items():
        try:
            mods[name] = importlib.import_module(modname)
        except ImportError:
            print(f"{name}: not installed (pip install {name})")
    times: dict[str, list[float]] = {n: [] for n in mods}
    sizes: dict[str, int] = {}
    for _ in range(a.trials):
        for name, mod in mods.items():
            t0 = time.perf_counter()
            sizes[name] = inflate(mod, raw)
            times[name].append(time.perf_counter() - t0)
    size = sizes["zlib"]
    assert all(n == size for n in sizes.values()), f"the modules disagree on the output's size: {sizes}"
    base = statistics.median(times["zlib"])
    print(f"{a.trace.name}: {len(raw) / 1e6:.1f} MB gzip -> {size / 1e6:.1f} MB JSON; median of {a.trials}")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"  {name:8} {m * 1e3:7.1f} ms  {size / 1e6 / m:6.0f} MB/s out  x{m / base:.2f} of zlib")


if __name__ == "__main__":
    main()
