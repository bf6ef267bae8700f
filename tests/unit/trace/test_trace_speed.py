"""Speed and memory of read_trace on the largest real traces: printed, not asserted.

Each measurement runs in a fresh interpreter so the peak is this read's alone. The peak is
VmHWM from /proc/self/status: ru_maxrss would not do, Linux carries the parent's high-water
mark into a forked child (pytest holding the other traces read 227 MB instead of 118). Reference point from the issue: HTA needs 6.6 s and 330 MB
for hta_ddp_2rank_nccl_v100/df_index_resolver.json.gz on this machine.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "data" / "traces" / "real"
REFERENCE = "hta_ddp_2rank_nccl_v100/df_index_resolver.json.gz"

_PROBE = r"""
import json, sys, time
import numpy, msgspec
from trainprof.trace import find_steps, link, read_trace
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


def _measure(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_print_read_speed_and_memory(capsys):
    files = sorted(SHARED.rglob("*.json*"), key=lambda p: p.stat().st_size)
    targets = [SHARED / REFERENCE] + ([files[-1]] if files and files[-1].resolve() != (SHARED / REFERENCE).resolve() else [])
    with capsys.disabled():
        for p in targets:
            m = _measure(p)
            print(f"\nread_trace {p.relative_to(SHARED)}: {m['events']} events -> {m['rows']} rows; "
                  f"read {m['read_s'] * 1000:.0f} ms, link+steps {m['link_steps_s'] * 1000:.0f} ms; "
                  f"peak RSS {m['peak_mb']:.0f} MB (interpreter+numpy+msgspec before reading: {m['base_mb']:.0f} MB)")
