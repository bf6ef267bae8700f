"""A gloo job with a planted straggler, for tests/integration/test_collectives_job.py.

Each rank runs 1 + TRIALS all_reduces under torch.profiler; rank SLOW sleeps SLEEP_MS before
each one, so it is the last to arrive at every collective. Writes OUT/rank{R}.json.
Usage: torchrun --standalone --nproc-per-node N planted_straggler.py OUT SLOW SLEEP_MS TRIALS [ELEMS]
(SLOW = -1: no straggler; ELEMS: fp32 elements per all_reduce, default 65536;
benchmarks/collectives_busbw.py uses it to compare trace-derived busbw with `trainprof bench`.)
"""

import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile

from trainprof.backends.distributed import end_process_group

out, slow, sleep_ms, trials = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
dist.init_process_group("gloo")
rank = dist.get_rank()
x = torch.ones(int(sys.argv[5]) if len(sys.argv) > 5 else 1 << 16)
dist.all_reduce(x)  # connection set-up outside the profiled window
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    # The ranks start their profilers at different instants: the first collective in the
    # window absorbs that, so it is not one of the trials.
    dist.all_reduce(x)
    for _ in range(trials):
        if rank == slow:
            time.sleep(sleep_ms / 1e3)
        dist.all_reduce(x)
prof.export_chrome_trace(str(out / f"rank{rank}.json"))
dist.barrier()
end_process_group()
# Every file is written and closed: leave without interpreter shutdown, where gloo's worker
# can still be freeing a tensor and abort the rank (src/trainprof/backends/distributed.py;
# busbw_paired.py, measured: 3 of 20 aborts on one core without, 0 of 30 with; this script
# with both ranks on one core: 0 of 20 with it).
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
