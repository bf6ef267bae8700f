"""A gloo job with a planted straggler, for tests/integration/test_collectives_job.py.

Each rank runs 1 + TRIALS all_reduces under torch.profiler, one per profiler step; rank SLOW
sleeps SLEEP_MS inside each step before its all_reduce, so it is the last to arrive at every
collective (its host enters the steps on time). The first step is the schedule's warm-up
and is not recorded: its all_reduce absorbs the ranks' different profiler start-up times
(hundreds of ms, rank by rank), which would otherwise be a real but irrelevant wait in the
window. Writes OUT/rank{R}.json, and OUT/sleeps.txt (JSON; not .json, which `analyze OUT` would read as a trace): the slow rank's sleeps as measured
(µs; a loaded host oversleeps by a few ms), the planted truth the tests compare with.
Usage: torchrun --standalone --nproc-per-node N planted_straggler.py OUT SLOW SLEEP_MS TRIALS [ELEMS]
(SLOW = -1: no straggler; ELEMS: fp32 elements per all_reduce, default 65536;
benchmarks/collectives_busbw.py uses it to compare trace-derived busbw with `trainprof bench`.)
"""

import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, schedule

from trainprof.backends.distributed import end_process_group

out, slow, sleep_ms, trials = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
dist.init_process_group("gloo")
rank = dist.get_rank()
x = torch.ones(int(sys.argv[5]) if len(sys.argv) > 5 else 1 << 16)
dist.all_reduce(x)  # connection set-up outside the profiled window
with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
             schedule=schedule(wait=0, warmup=1, active=trials),
             on_trace_ready=lambda p: p.export_chrome_trace(str(out / f"rank{rank}.json"))) as prof:
    dist.all_reduce(x)  # the warm-up step (module docstring)
    prof.step()
    slept = []
    for _ in range(trials):
        if rank == slow:
            t0 = time.perf_counter()
            time.sleep(sleep_ms / 1e3)
            slept.append((time.perf_counter() - t0) * 1e6)
        dist.all_reduce(x)
        prof.step()
if rank == slow:
    (out / "sleeps.txt").write_text(json.dumps(slept))
dist.barrier()
end_process_group()
# Every file is written and closed: leave without interpreter shutdown, where gloo's worker
# can still be freeing a tensor and abort the rank (src/trainprof/backends/distributed.py;
# busbw_paired.py, measured: 3 of 20 aborts on one core without, 0 of 30 with; this script
# with both ranks on one core: 0 of 20 with it).
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
