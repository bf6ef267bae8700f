"""`trainprof bench allreduce`'s timing of all_reduces, and the trace of those same all_reduces.

Each round, on every rank: two warm-up all_reduces, then, under torch.profiler, the bench's
own timing (trainprof.bench.collectives._time_collective: barrier, host clock around ITERS
back-to-back all_reduces, mean per collective; averaged over the ranks afterwards as the
bench does), exported as OUT/round{k}/rank{r}.json. The trace-derived busbw (analysis/
collectives_job.py) is then that of exactly the collectives the bench timed: separate jobs,
or even a bench loop and a profiled loop a second apart, ran 1.6-3.6 ms per 4 MB all_reduce
on this shared machine from one second to the next, which no method can compare to 10%
(docs/collectives.md). The profiler adds a few records per collective (µs against ms).
Rank 0 writes OUT/bench.json: {"bytes": S, "ranks": n, "seconds": [mean per round]}.

Usage: torchrun --standalone --nproc-per-node N busbw_paired.py OUT ELEMS ROUNDS ITERS
"""

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile

from trainprof.backends import get_backend
from trainprof.backends.distributed import end_process_group
from trainprof.bench.collectives import _time_collective

out, elems, rounds, iters = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(1)  # as the bench on a 2-core machine with 2 ranks: gloo's threads move the bytes
dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
backend = get_backend("cpu")
x = torch.zeros(elems)  # zeros, as the bench: sums stay 0


def reduce_all() -> None:
    dist.all_reduce(x)


seconds = []
for k in range(rounds):
    for _ in range(2):  # warm-up outside the window
        reduce_all()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        mean = _time_collective(reduce_all, backend, 0, iters)
    t = torch.tensor([mean], dtype=torch.float64)
    dist.all_reduce(t)  # the bench's figure: the mean over ranks
    seconds.append(float(t.item()) / n)
    folder = out / f"round{k}"
    folder.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(folder / f"rank{rank}.json"))
    dist.barrier()
if rank == 0:
    (out / "bench.json").write_text(json.dumps({"bytes": 4 * elems, "ranks": n, "seconds": seconds}))
dist.barrier()
end_process_group()
# Every file is written and closed: leave without interpreter shutdown, where gloo's worker
# can still be freeing a tensor and abort the rank (src/trainprof/backends/distributed.py;
# this script with both ranks on one core: 3 of 20 runs aborted ending with a plain
# destroy_process_group(), 0 of 30 ending with os._exit).
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
